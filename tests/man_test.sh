#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# man_test.sh - the manual pages against the programs they describe (docs/man):
#   - `cmake --install` puts each page, gzip -9n compressed, under share/man/manN;
#   - each installed page renders with `man -l` without a warning (lintian's command);
#   - tsmine(1): every command `tsmine --help` lists (and each shapelet subcommand) has
#     its "tsmine COMMAND" subsection, every option its --help prints appears there or in
#     an "Options of ..." subsection, every exit status it lists appears there or under
#     EXIT STATUS;
#   - tsmined(8): every option of `tsmined --help` under OPTIONS, every exit status it
#     lists under EXIT STATUS, every signal daemon/core/signals.c handles under SIGNALS;
#   - tsmined.conf(5): every key `tsmined --check-config` prints has its entry, showing
#     the same default (overrides' keys through streams.default's), and no key of the
#     settings table is left undescribed;
#   - tsmine-bench(1), tsmine-loadgen(1): every option of their --help.
# Usage: man_test.sh --build DIR --mandir DIR --source DIR --have-pages 0|1
#                    --tsmine EXE [--tsmined EXE] [--bench EXE] [--loadgen EXE]
# Exit 0, 1 with every mismatch listed, 77 (skipped) when the pages were not built
# (no scdoc at configure time).
set -euo pipefail

build="" mandir="" source="" have_pages=0 tsmine="" tsmined="" bench="" loadgen=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2 ;;
    --mandir) mandir=$2 ;;
    --source) source=$2 ;;
    --have-pages) have_pages=$2 ;;
    --tsmine) tsmine=$2 ;;
    --tsmined) tsmined=$2 ;;
    --bench) bench=$2 ;;
    --loadgen) loadgen=$2 ;;
    *) echo "man_test: unknown argument $1" >&2; exit 64 ;;
    esac
    shift 2
done
if [ "$have_pages" != 1 ]; then
    echo "SKIP: the manual pages were not built (scdoc was not found at configure time)"
    exit 77
fi
for tool in man col gzip; do
    command -v "$tool" >/dev/null || { echo "man_test: $tool is missing (Debian: man-db, bsdextrautils, gzip)" >&2; exit 1; }
done
export LC_ALL=C.UTF-8
# man-db sandboxes groff with seccomp, which some containers refuse ("exited with
# status 159"); the pages here are our own.
export MAN_DISABLE_SECCOMP=1

work=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-man.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# ---- installed where man finds them ----
DESTDIR="$work/root" cmake --install "$build" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; exit 1; }
pages=(man1/tsmine.1 man1/tsmine-bench.1)
[ -n "$loadgen" ] && pages+=(man1/tsmine-loadgen.1)
[ -n "$tsmined" ] && pages+=(man8/tsmined.8 man5/tsmined.conf.5)
declare -A text # page name -> its rendering, one paragraph a line
for p in "${pages[@]}"; do
    gz="$work/root$mandir/$p.gz"
    name=$(basename "$p")
    if [ ! -f "$gz" ]; then
        fail "$name is not installed as $mandir/$p.gz"
        continue
    fi
    # gzip -9n: the header's mtime is 0 and XFL says maximum compression (lintian)
    read -r -a hdr < <(od -An -tu1 -j4 -N5 "$gz")
    [ "${hdr[*]}" = "0 0 0 0 2" ] || fail "$name.gz is not compressed with gzip -9n (header ${hdr[*]})"
    # lintian's own check (groff-message): no warning at 80 columns
    warnings=$(MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$gz" 2>&1 >/dev/null || true)
    [ -z "$warnings" ] || fail "$name: man --warnings: $warnings"
    # wide, so that no paragraph wraps: options and keys are searched as written
    MANWIDTH=2000 man -l "$gz" 2>/dev/null | col -bx >"$work/$name.txt"
    grep -q '^NAME' "$work/$name.txt" || fail "$name does not render (no NAME section)"
    text[$name]="$work/$name.txt"
done

# section FILE TITLE [LEVEL]: the lines of the section headed TITLE (SH: column 0,
# SS: 3 spaces), up to the next heading of the same or a higher level.
section() {
    awk -v title="$2" -v level="${3:-SH}" '
        function heading(l) { if (l ~ /^[^ ]/) return 1; if (l ~ /^   [^ ]/) return 2; return 0 }
        { h = heading($0) }
        on && h && h <= (level == "SH" ? 1 : 2) { on = 0 }
        h == (level == "SH" ? 1 : 2) && $0 == (level == "SH" ? title : "   " title) { on = 1; next }
        on { print }' "$1"
}

# options HELPFILE: the long options anywhere in a --help text, and the short ones
# that start an option line.
options() {
    { grep -oE -- '(^|[^-a-zA-Z0-9])--[a-z0-9][a-z0-9-]*' "$1" | sed 's/^[^-]*//' || true
      grep -oE -- '^ +-[a-zA-Z]([ ,]|$)' "$1" | grep -oE -- '-[a-zA-Z]' || true; } | sort -u
}

# exit_codes HELPFILE: the statuses named from "Exit status" or "Exits" to the end of
# that paragraph (0 and 64..78, the sysexits codes).
exit_codes() {
    awk '/Exit status|Exits / { on = 1; sub(/.*(Exit status|Exits )/, "") } on && /^$/ { on = 0 } on' "$1" |
        grep -oE '\b[0-9]{1,2}\b' | awk '$1 == 0 || ($1 >= 64 && $1 <= 78)' | sort -un || true
}

# has TEXTFILE OPTION: the option appears as a word (not inside a longer option)
has() {
    grep -qE -- "(^|[^-a-zA-Z0-9])$2([^-a-zA-Z0-9]|\$)" "$1"
}

# documented_codes SECTIONFILE: the statuses on the term lines of an EXIT STATUS section
documented_codes() {
    grep -E '^       [0-9]' "$1" | grep -oE '\b[0-9]{1,2}\b' | sort -un || true
}

# ---- tsmine(1) ----
if [ -n "${text[tsmine.1]:-}" ]; then
    page=${text[tsmine.1]}
    "$tsmine" --help >"$work/help"
    commands=$(awk '/^Commands:|^Talking to/ { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' "$work/help")
    [ -n "$commands" ] || fail "tsmine --help lists no command"
    section "$page" "COMMANDS" >"$work/commands"
    { section "$work/commands" "Options of the batch commands" SS
      section "$work/commands" "Options of the daemon commands" SS; } >"$work/common"
    section "$page" "EXIT STATUS" >"$work/exit"
    documented_codes "$work/exit" >"$work/codes"
    checked=0
    for c in $commands; do
        subs=("$c")
        if [ "$c" = shapelet ]; then # tsmine shapelet train|predict|show
            mapfile -t subs < <("$tsmine" shapelet --help | sed -n 's/^Usage: tsmine shapelet \([a-z|]*\).*/\1/p' | tr '|' '\n' | sed 's/^/shapelet /')
        fi
        for s in "${subs[@]}"; do
            # shellcheck disable=SC2086 # "shapelet train" is two arguments
            "$tsmine" $s --help >"$work/help.$c" 2>&1 || fail "tsmine $s --help failed"
            section "$work/commands" "tsmine $s" SS >"$work/sec"
            if [ ! -s "$work/sec" ]; then
                fail "tsmine(1) has no subsection \"tsmine $s\""
                continue
            fi
            cat "$work/sec" "$work/common" >"$work/where"
            for o in $(options "$work/help.$c"); do
                has "$work/where" "$o" || fail "tsmine(1): \"tsmine $s\" lacks $o (tsmine $s --help has it)"
                checked=$((checked + 1))
            done
            for code in $(exit_codes "$work/help.$c"); do
                grep -qx "$code" "$work/codes" || has "$work/sec" "$code" ||
                    fail "tsmine(1): exit status $code of tsmine $s is not documented"
            done
        done
    done
    echo "tsmine(1): $(echo "$commands" | wc -w) commands, $checked options checked"
fi

# ---- tsmined(8) ----
if [ -n "${text[tsmined.8]:-}" ]; then
    page=${text[tsmined.8]}
    "$tsmined" --help >"$work/dhelp"
    section "$page" "OPTIONS" >"$work/opts"
    for o in $(options "$work/dhelp"); do
        has "$work/opts" "$o" || fail "tsmined(8): OPTIONS lacks $o (tsmined --help has it)"
    done
    section "$page" "EXIT STATUS" >"$work/dexit"
    documented_codes "$work/dexit" >"$work/dcodes"
    for code in $(exit_codes "$work/dhelp"); do
        grep -qx "$code" "$work/dcodes" || fail "tsmined(8): EXIT STATUS lacks $code (tsmined --help lists it)"
    done
    section "$page" "SIGNALS" >"$work/sigs"
    signals=$(grep -oE 'sigaction\(SIG[A-Z0-9]+' "$source/daemon/core/signals.c" | sed 's/sigaction(//' | sort -u)
    [ -n "$signals" ] || fail "no sigaction(SIG...) found in daemon/core/signals.c"
    for sig in $signals; do
        has "$work/sigs" "$sig" || fail "tsmined(8): SIGNALS lacks $sig (daemon/core/signals.c handles it)"
    done
    echo "tsmined(8): $(options "$work/dhelp" | wc -l) options, $(exit_codes "$work/dhelp" | wc -l) exit statuses, $(echo "$signals" | wc -w) signals checked"
fi

# ---- tsmined.conf(5) ----
if [ -n "${text[tsmined.conf.5]:-}" ]; then
    page=${text[tsmined.conf.5]}
    printf '%s\n' 'streams = { overrides = ( { match = "x*"; window = 2048; } ); };' >"$work/o.conf"
    { "$tsmined" --check-config && "$tsmined" --check-config -c "$work/o.conf"; } >"$work/printed" ||
        { fail "tsmined --check-config failed"; exit 1; }
    grep -v '^#' "$work/printed" | sort -u >"$work/keys"
    n=0
    while IFS= read -r line; do
        key=${line%% = *}
        value=${line#* = }
        value=${value%;}
        case "$key" in
        streams.overrides\[*\].match)
            section "$page" KEYS | grep -q '^       streams\.overrides = ' ||
                fail "tsmined.conf(5) has no entry for streams.overrides ($key)"
            continue ;;
        streams.overrides\[*\].*)
            key=streams.default.${key#streams.overrides\[*\].}
            value=$(awk -v k="$key" 'index($0, k " = ") == 1 { sub(/^[^=]*= /, ""); sub(/;$/, ""); print; exit }' "$work/printed") ;;
        esac
        n=$((n + 1))
        entry=$(grep -E "^       [^ ]+ = " "$page" | grep -F "       $key = " | head -1 || true)
        if [ -z "$entry" ]; then
            fail "tsmined.conf(5) has no entry for $key (tsmined --check-config prints it)"
        elif [ "${entry#       "$key" = }" != "$value [reload]" ] &&
            [ "${entry#       "$key" = }" != "$value [restart]" ]; then
            fail "tsmined.conf(5): \"${entry#       }\" but tsmined --check-config says $key = $value"
        fi
    done <"$work/keys"
    if grep -q 'KEYS NOT DESCRIBED YET' "$page"; then
        fail "tsmined.conf(5) lacks descriptions (an @key line in docs/man/tsmined.conf.5.scd) of:"
        awk '/Not described yet/ { print prev } { prev = $0 }' "$page"
    fi
    echo "tsmined.conf(5): $n keys checked, defaults as tsmined --check-config prints them"
fi

# ---- tsmine-bench(1), tsmine-loadgen(1) ----
check_all_options() { # NAME PAGE HELP...
    local name=$1 page=$2
    shift 2
    for h in "$@"; do
        for o in $(options "$h"); do
            has "$page" "$o" || fail "$name lacks $o (its --help has it)"
        done
    done
}
if [ -n "${text[tsmine-bench.1]:-}" ]; then
    "$bench" --help >"$work/bhelp"
    "$bench" shapelet --help >"$work/bshelp"
    section "${text[tsmine-bench.1]}" OPTIONS >"$work/bopts"
    check_all_options "tsmine-bench(1)" "$work/bopts" "$work/bhelp" "$work/bshelp"
fi
if [ -n "${text[tsmine-loadgen.1]:-}" ]; then
    "$loadgen" --help >"$work/lhelp"
    section "${text[tsmine-loadgen.1]}" OPTIONS >"$work/lopts"
    check_all_options "tsmine-loadgen(1)" "$work/lopts" "$work/lhelp"
fi

if [ "$failures" -ne 0 ]; then
    echo "man_test: $failures failures (the pages' sources: docs/man/*.scd)"
    exit 1
fi
echo "man_test: ${#pages[@]} pages installed, rendered without warnings, and match the programs"
