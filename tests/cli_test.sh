#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cli_test.sh TSMINE DATADIR - integration test of the `tsmine` command-line tool
# (DESIGN 6), driving the real binary through its real interface.
#
# Generates small series in every input format (with python3, standard library only)
# in a temporary folder, and runs tsmine on them and on the NAB series in DATADIR.
# Checks exit codes of every error class, one-line error messages, help, output field
# names and counts, CSV headers, and that every input format of the same values gives
# identical output. Prints `ok - NAME` or `not ok - NAME` per check, then one line
# `N passed, M failed`; exits non-zero when any check failed.
# shellcheck disable=SC2016 # awk programs are single-quoted on purpose
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 TSMINE DATADIR" >&2
    exit 64
fi
TSMINE=$1
DATA=$2
NAB=$DATA/machine_temperature_system_failure.csv

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

passed=0
failed=0

ok() {
    passed=$((passed + 1))
    echo "ok - $1"
}

# not_ok NAME [WHY]: a failed check, with a diagnostic line.
not_ok() {
    failed=$((failed + 1))
    echo "not ok - $1"
    if [ -n "${2-}" ]; then
        echo "#   $2"
    fi
}

skip() {
    passed=$((passed + 1))
    echo "ok - $1 # SKIP $2"
}

# run ARGS...: runs tsmine; stdout in $tmp/out, stderr in $tmp/err, status in $rc.
run() {
    "$TSMINE" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# run_in FILE ARGS...: the same with standard input from FILE.
run_in() {
    in=$1
    shift
    "$TSMINE" "$@" <"$in" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

nlines() { wc -l <"$1" | tr -d ' '; }
errtext() { head -c 300 "$tmp/err" | tr '\n' '|'; }

# expect NAME CODE ARGS...: tsmine ARGS exits CODE; a failure prints exactly one
# stderr line starting with "tsmine: ".
expect() {
    name=$1
    want=$2
    shift 2
    run "$@"
    if [ "$rc" -ne "$want" ]; then
        not_ok "$name" "exit $rc, want $want; stderr: $(errtext)"
    elif [ "$want" -ne 0 ] &&
        { [ "$(nlines "$tmp/err")" -ne 1 ] || ! grep -q '^tsmine: ' "$tmp/err"; }; then
        not_ok "$name" "want one 'tsmine: ' line on stderr, got: $(errtext)"
    else
        ok "$name"
    fi
}

# expect_err NAME CODE PATTERN ARGS...: like expect, and stderr matches PATTERN (grep -E).
expect_err() {
    name=$1
    want=$2
    pat=$3
    shift 3
    expect "$name" "$want" "$@"
    if [ "$rc" -eq "$want" ] && ! grep -Eq -- "$pat" "$tmp/err"; then
        passed=$((passed - 1))
        not_ok "$name (message)" "stderr does not match '$pat': $(errtext)"
    fi
}

# expect_n NAME N FILE [ARGS...]: reading FILE gives a series of N values. Kernel-free:
# asks for m > n and reads n back from the error message.
expect_n() {
    name=$1
    want=$2
    file=$3
    shift 3
    run profile -m 100000000 "$@" "$file"
    if [ "$rc" -eq 64 ] && grep -q "(n = $want)" "$tmp/err"; then
        ok "$name"
    else
        not_ok "$name" "want n = $want, exit 64; exit $rc, stderr: $(errtext)"
    fi
}

# same NAME A B: files A and B are identical (and A is not empty).
same() {
    if [ -s "$2" ] && cmp -s "$2" "$3"; then
        ok "$1"
    else
        not_ok "$1" "$(diff "$2" "$3" 2>&1 | head -3 | tr '\n' '|')"
    fi
}

# ---- generated inputs --------------------------------------------------------------

N=600   # values in the generated series
M=16    # subsequence length used with it
SUBS=$((N - M + 1))
ANOM=400 # a zigzag burst is planted at ANOM..ANOM+15

have_python=0
if command -v python3 >/dev/null 2>&1 && python3 - "$tmp" "$N" "$ANOM" <<'EOF'; then
import math, os, random, struct, sys

d, n, anom = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261121)
t, x = [], 0.0
for i in range(n):
    x += rng.gauss(0.0, 1.0)
    t.append(x)
for k in range(16):  # a zigzag burst, unlike anything a random walk does
    t[anom + k] += 6.0 * math.sin(2 * math.pi * k / 4 + 0.5)

def write(name, data, mode="w"):
    with open(os.path.join(d, name), mode) as f:
        f.write(data)

def npy(values, descr="<f8", shape=None, fortran=False, version=1, data=None):
    shape = shape if shape is not None else (len(values),)
    shp = "(" + "".join("%d," % s for s in shape) + ")" if len(shape) == 1 else repr(shape)
    head = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shp)
    pre = 10 if version == 1 else 12
    head += " " * ((64 - (pre + len(head) + 1) % 64) % 64) + "\n"
    lenfield = struct.pack("<H" if version == 1 else "<I", len(head))
    if data is None:
        fmt = {"<f8": "<%dd", "<f4": "<%df", "<i8": "<%dq", ">f8": ">%dd"}[descr]
        data = struct.pack(fmt % len(values), *values)
    return b"\x93NUMPY" + bytes([version, 0]) + lenfield + head.encode("latin1") + data

# The same values in every format.
rows = ["2024-01-01 %d,%r" % (i, v) for i, v in enumerate(t)]
write("walk.csv", "timestamp,value\n" + "".join(r + "\n" for r in rows))
write("walk_crlf.csv", "timestamp,value\r\n" + "".join(r + "\r\n" for r in rows))
write("walk.txt", "".join("%r\n" % v for v in t) + "\n\n")
write("walk.npy", npy(t), "wb")
write("walk_v2.npy", npy(t, version=2), "wb")
write("walk_v3.npy", npy(t, version=3), "wb")
write("walk.f64", struct.pack("<%dd" % n, *t), "wb")
write("walk.raw", struct.pack("<%dd" % n, *t), "wb")
# float32: the .npy and the text of the same values widened to double.
t32 = list(struct.unpack("<%df" % n, struct.pack("<%df" % n, *t)))
write("walk32.npy", npy(t32, descr="<f4"), "wb")
write("walk32.txt", "".join("%r\n" % v for v in t32))
# Missing values: empty fields, nan spellings, an infinity; a blank line inside.
rows = ["%d,%r" % (i, v) for i, v in enumerate(t)]
rows[100] = "100,"
rows[101] = "101,nan"
rows[102] = "102,NaN"
rows[300] = "300,inf"
rows[301] = "301,-inf"
write("gaps.csv", "timestamp,value\n" + "\n".join(rows) + "\n")
lines = ["%r\n" % v for v in t[:20]]
write("blank_inside.txt", "".join(lines[:10]) + "\n" + "".join(lines[10:]))
# Malformed inputs.
write("bad.csv", "timestamp,value\n1,2.5\n2,3.5\n3,oops\n4,5\n")
write("header_only.csv", "timestamp,value\n")
write("empty.csv", "")
write("badmagic.npy", b"\x93NUMPZ\x01\x00" + npy(t)[8:], "wb")
write("twod.npy", npy(t, shape=(n // 2, 2)), "wb")
write("int.npy", npy(list(range(n)), descr="<i8"), "wb")
write("bigendian.npy", npy(t, descr=">f8"), "wb")
write("fortran.npy", npy(t, fortran=True), "wb")
write("trunc.npy", npy(t)[:-8], "wb")
write("extra.npy", npy(t) + b"\0" * 8, "wb")
write("short.npy", b"\x93NUM", "wb")
write("odd.f64", b"\0" * 12, "wb")
# Layouts of text that must be read right or refused (series_text.c).
write("walk_semicolon.csv", "time;value\n" + "".join(
    "2024-01-01 %d;%s\n" % (i, repr(v).replace(".", ",")) for i, v in enumerate(t)))
write("walk_oneline.txt", " ".join(repr(v) for v in t) + "\n")
write("walk_tabs.txt", "".join("\t".join(repr(v) for v in t[i:i + 7]) + "\n"
                               for i in range(0, n, 7)))
write("walk_label.csv", "timestamp,value,label\n" + "".join(
    "%d,%r,%d\n" % (i, v, i % 2) for i, v in enumerate(t)))
write("walk_tsv.txt", "timestamp\tvalue\n" + "".join(
    "2024-01-01 %d\t%r\n" % (i, v) for i, v in enumerate(t)))
write("label_last.csv", "value,label\n1.5,normal\n2.5,anomaly\n")
write("ragged.csv", "a,b\n1,2\n3,4,5\n")
write("empty.f64", b"", "wb")
EOF
    have_python=1
fi

# ---- help, version, usage errors (no kernels needed) -------------------------------

expect "tsmine --help exits 0" 0 --help
if grep -q discord "$tmp/out" && grep -q motif "$tmp/out" && grep -q profile "$tmp/out"; then
    ok "tsmine --help lists the commands"
else
    not_ok "tsmine --help lists the commands"
fi
expect "tsmine --version exits 0" 0 --version
for cmd in discord motif profile; do
    expect "$cmd --help exits 0" 0 "$cmd" --help
    if grep -q "^Usage: tsmine $cmd " "$tmp/out" && [ ! -s "$tmp/err" ]; then
        ok "$cmd --help prints its usage on stdout"
    else
        not_ok "$cmd --help prints its usage on stdout"
    fi
done
expect "no command -> 64" 64
expect "unknown command -> 64" 64 frobnicate -m 8 x.csv
expect "unknown long option -> 64" 64 discord -m 8 --no-such-option x.csv
expect "unknown short option -> 64" 64 profile -m 8 -k 2 x.csv
expect "missing -m -> 64" 64 discord x.csv
expect "missing FILE -> 64" 64 discord -m 8
expect "two FILEs -> 64" 64 discord -m 8 a.csv b.csv
expect "option without its argument -> 64" 64 discord x.csv -m
expect_err "flag given an argument -> 64 naming it" 64 "misused option '--verbose=1'" \
    profile -m 8 --verbose=1 x.csv
expect "-k and -r together -> 64" 64 discord -m 8 -k 2 -r 1.5 x.csv
expect "-k 0 -> 64" 64 discord -m 8 -k 0 x.csv
expect "-m not a number -> 64" 64 discord -m 8x x.csv
expect "negative -r -> 64" 64 discord -m 8 -r -1 x.csv
expect "--format xml -> 64" 64 profile -m 8 --format xml x.csv
expect "--backend gpu -> 64" 64 profile -m 8 --backend gpu x.csv
expect "--input-format xls -> 64" 64 profile -m 8 --input-format xls x.csv

# ---- input errors -----------------------------------------------------------------

expect_err "missing file -> 66" 66 "^tsmine: $tmp/nope.csv: No such file or directory$" \
    profile -m 8 "$tmp/nope.csv"
expect_err "directory as input -> 66" 66 "^tsmine: $tmp: " profile -m 8 "$tmp"

if [ "$have_python" -eq 1 ]; then
    expect_err "malformed csv -> 65 with FILE:LINE" 65 "^tsmine: $tmp/bad.csv:4: .*oops" \
        profile -m 3 "$tmp/bad.csv"
    expect_err "header-only csv -> 65" 65 "no values" profile -m 3 "$tmp/header_only.csv"
    expect_err "empty csv -> 65" 65 "no values" profile -m 3 "$tmp/empty.csv"
    expect_err "npy with bad magic -> 65" 65 "magic" profile -m 8 "$tmp/badmagic.npy"
    expect_err "2-D npy -> 65" 65 "1-D" profile -m 8 "$tmp/twod.npy"
    expect_err "int64 npy -> 65" 65 "dtype" profile -m 8 "$tmp/int.npy"
    expect_err "big-endian npy -> 65" 65 "dtype" profile -m 8 "$tmp/bigendian.npy"
    expect_err "fortran-order npy -> 65" 65 "Fortran" profile -m 8 "$tmp/fortran.npy"
    expect_err "truncated npy -> 65" 65 "truncated" profile -m 8 "$tmp/trunc.npy"
    expect "npy with trailing bytes -> 65" 65 profile -m 8 "$tmp/extra.npy"
    expect "npy shorter than its preamble -> 65" 65 profile -m 8 "$tmp/short.npy"
    expect_err ".f64 of 12 bytes -> 65" 65 "multiple of 8" profile -m 8 "$tmp/odd.f64"
    expect "empty .f64 -> 65" 65 profile -m 8 "$tmp/empty.f64"
    expect "npy from stdin with --input-format, bad magic -> 65" 65 \
        profile -m 8 --input-format npy - <"$tmp/badmagic.npy"

    # ---- text that could be misread is refused (series_text.c) ------------------------
    expect_err "decimal comma in a ;-separated csv -> 65 naming it" 65 \
        "walk_semicolon.csv:2: \"[-0-9]+,[0-9e-]+\" in column 2 \(value\) has a decimal comma" \
        profile -m 8 "$tmp/walk_semicolon.csv"
    expect_err "three columns without --column -> 65 listing them" 65 \
        "walk_label.csv:1: 3 columns \(timestamp, value, label\): .*--column" \
        profile -m 8 "$tmp/walk_label.csv"
    expect_err "a non-numeric last column -> 65 naming it" 65 \
        "label_last.csv:2: not a number in column 2 \(label\): \"normal\"" \
        profile -m 8 "$tmp/label_last.csv"
    expect_err "rows of differing widths -> 65" 65 "ragged.csv:3: 3 fields, expected 2" \
        profile -m 8 "$tmp/ragged.csv"
    expect_err "--column beyond the last -> 64" 64 "--column 4: the rows have 3 columns" \
        profile -m 8 --column 4 "$tmp/walk_label.csv"
    expect_err "--column with an unknown name -> 64" 64 "no such column.*timestamp, value, label" \
        profile -m 8 --column price "$tmp/walk_label.csv"
    expect_err "--column on .npy -> 64" 64 "text input only" profile -m 8 --column 1 "$tmp/walk.npy"
    expect "--decimal-comma with --delimiter , -> 64" 64 \
        profile -m 8 --decimal-comma --delimiter , "$tmp/walk.csv"
    expect "--delimiter of two characters -> 64" 64 profile -m 8 --delimiter ';;' "$tmp/walk.csv"
    # ... and the same text read right when told how.
    expect_n "--decimal-comma reads the ;-separated csv" "$N" "$tmp/walk_semicolon.csv" \
        --decimal-comma
    expect_n "--column value picks the column by name" "$N" "$tmp/walk_label.csv" --column value
    expect_n "--column 2 picks the column by number" "$N" "$tmp/walk_label.csv" --column 2
    expect_n "blank-separated values on one line" "$N" "$tmp/walk_oneline.txt"
    expect_n "tab-separated values on many lines" "$N" "$tmp/walk_tabs.txt"
    expect_n "tab-separated columns under a header" "$N" "$tmp/walk_tsv.txt"
    expect_n "--delimiter tab" "$N" "$tmp/walk_tsv.txt" --delimiter tab

    # ---- parameters that do not fit the data -----------------------------------------
    expect_err "m < 3 -> 64" 64 "m = 2" profile -m 2 "$tmp/walk.csv"
    expect_err "m > n -> 64" 64 "n = $N" discord -m $((N + 1)) "$tmp/walk.csv"
    expect "--excl 0 -> 64" 64 motif -m 8 --excl 0 "$tmp/walk.csv"

    # ---- reading: every format, header, CRLF, blanks, NaN (kernel-free) -----------
    expect_n "csv with header: n values" "$N" "$tmp/walk.csv"
    expect_n "csv with CRLF: n values" "$N" "$tmp/walk_crlf.csv"
    expect_n "txt with trailing blank lines: n values" "$N" "$tmp/walk.txt"
    expect_n "npy 1.0: n values" "$N" "$tmp/walk.npy"
    expect_n "npy 2.0: n values" "$N" "$tmp/walk_v2.npy"
    expect_n "npy 3.0: n values" "$N" "$tmp/walk_v3.npy"
    expect_n "npy float32: n values" "$N" "$tmp/walk32.npy"
    expect_n "f64: n values" "$N" "$tmp/walk.f64"
    expect_n "--input-format f64 on another extension" "$N" "$tmp/walk.raw" --input-format f64
    expect_n "csv with nan, empty and inf fields: n values" "$N" "$tmp/gaps.csv"
    expect_n "blank line inside is a missing value" 21 "$tmp/blank_inside.txt"
    run_in "$tmp/walk.f64" profile -m 100000000 --input-format f64 -
    if [ "$rc" -eq 64 ] && grep -q "(n = $N)" "$tmp/err"; then
        ok "stdin with --input-format f64"
    else
        not_ok "stdin with --input-format f64" "exit $rc: $(errtext)"
    fi
    expect_n "NAB csv: header skipped" 22695 "$NAB"
    run profile -m 8 --backend cuda "$tmp/walk.csv"
    if [ "$rc" -eq 69 ] && [ "$(nlines "$tmp/err")" -eq 1 ]; then
        ok "--backend cuda without CUDA -> 69"
    elif [ "$rc" -eq 0 ] && [ -s "$tmp/out" ]; then
        skip "--backend cuda without CUDA -> 69" "this build and machine have CUDA"
    else
        not_ok "--backend cuda without CUDA -> 69" "exit $rc: $(errtext)"
    fi
else
    skip "generated inputs" "no python3"
fi

# ---- results (need the kernels) ----------------------------------------------------

NUM='-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?'
# The timestamps that follow when the input has a timestamp column (NAB, walk.csv).
TS='(,"[a-z_]*timestamp":("[^"]*"|null)){2}'
PROFILE_LINE="^\{\"index\":[0-9]+,\"distance\":$NUM,\"neighbor\":[0-9]+($TS)?\}$"
DISCORD_LINE="^\{\"rank\":[0-9]+,\"index\":[0-9]+,\"distance\":$NUM,\"neighbor\":[0-9]+($TS)?\}$"
MOTIF_LINE="^\{\"rank\":[0-9]+,\"a\":[0-9]+,\"b\":[0-9]+,\"distance\":$NUM($TS)?\}$"

# strip_ts FILE: removes the timestamp fields from JSON lines, in place.
strip_ts() {
    sed 's/,"[a-z_]*timestamp":\("[^"]*"\|null\)//g' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

# lines_are NAME COUNT REGEX: the last run succeeded and printed COUNT lines, each
# matching REGEX (grep -E).
lines_are() {
    if [ "$rc" -ne 0 ]; then
        not_ok "$1" "exit $rc: $(errtext)"
        return
    fi
    count=$(nlines "$tmp/out")
    bad=$(grep -Evc -- "$3" "$tmp/out")
    if [ "$count" -eq "$2" ] && [ "$bad" -eq 0 ]; then
        ok "$1"
    else
        not_ok "$1" "$count lines (want $2), $bad malformed, first: $(grep -Ev -- "$3" "$tmp/out" |
            head -1)"
    fi
}

# holds NAME AWK: the last run succeeded and the awk statements, run on every output
# line split at ':', ',' and '}', never set bad. For a JSON line the values are the
# even fields: $2, $4, ... in the order of the output's fields.
holds() {
    if [ "$rc" -eq 0 ] && [ -s "$tmp/out" ] &&
        awk -F'[:,}]' -v m=$M "$2 END { exit bad }" "$tmp/out"; then
        ok "$1"
    else
        not_ok "$1" "exit $rc: $(errtext) $(head -3 "$tmp/out" | tr '\n' '|')"
    fi
}

# csv_header_is NAME HEADER ROWS: the last run printed HEADER then ROWS lines.
csv_header_is() {
    if [ "$rc" -eq 0 ] && [ "$(head -1 "$tmp/out")" = "$2" ] &&
        [ "$(nlines "$tmp/out")" -eq $(($3 + 1)) ]; then
        ok "$1"
    else
        not_ok "$1" "exit $rc: $(errtext) $(head -1 "$tmp/out")"
    fi
}

if [ "$have_python" -eq 1 ]; then
    run profile -m $M "$tmp/walk.csv"
    cp "$tmp/out" "$tmp/profile.json"
    lines_are "profile prints n-m+1 lines of index, distance, neighbor" "$SUBS" "$PROFILE_LINE"
    holds "profile indices are 0..N-1 in order" '$2 != NR - 1 { bad = 1 }'
    holds "profile neighbours are non-self-matches" \
        '{ d = $2 - $6; if (d < 0) d = -d; if (d < m) bad = 1 }'
    holds "profile of a csv with a timestamp column: each row names the timestamps" \
        '$8 != "\"2024-01-01 " $2 "\"" || $10 != "\"2024-01-01 " $6 "\"" { bad = 1 }'
    strip_ts "$tmp/profile.json"

    # The same values in every input format give byte-identical output.
    for f in walk_crlf.csv walk.txt walk.npy walk_v2.npy walk_v3.npy walk.f64; do
        run profile -m $M "$tmp/$f"
        strip_ts "$tmp/out"
        same "profile of $f equals that of walk.csv" "$tmp/profile.json" "$tmp/out"
    done
    # Text layouts read with their options give the same values.
    for args in "--decimal-comma $tmp/walk_semicolon.csv" "--column value $tmp/walk_label.csv" \
        "$tmp/walk_oneline.txt" "$tmp/walk_tabs.txt" "$tmp/walk_tsv.txt"; do
        # shellcheck disable=SC2086 # the words are options and a path without blanks
        run profile -m $M $args
        strip_ts "$tmp/out"
        same "profile of $(basename "${args##* }") (${args%% *}) equals that of walk.csv" \
            "$tmp/profile.json" "$tmp/out"
    done
    run profile -m $M --input-format f64 "$tmp/walk.raw"
    same "profile of --input-format f64 equals that of walk.csv" "$tmp/profile.json" "$tmp/out"
    run_in "$tmp/walk.txt" profile -m $M -
    same "profile of stdin text equals that of walk.csv" "$tmp/profile.json" "$tmp/out"
    run_in "$tmp/walk.npy" profile -m $M --input-format npy -
    same "profile of stdin npy equals that of walk.csv" "$tmp/profile.json" "$tmp/out"
    run profile -m $M "$tmp/walk32.txt"
    cp "$tmp/out" "$tmp/profile32.json"
    run profile -m $M "$tmp/walk32.npy"
    same "float32 npy gives the profile of its values as text" "$tmp/profile32.json" "$tmp/out"

    run profile -m $M --format csv "$tmp/walk.csv"
    csv_header_is "profile --format csv with timestamps: header and n-m+1 rows" \
        "index,distance,neighbor,timestamp,neighbor_timestamp" "$SUBS"
    run profile -m $M --format csv "$tmp/walk.txt"
    csv_header_is "profile --format csv: header and n-m+1 rows" "index,distance,neighbor" "$SUBS"
    sed 1d "$tmp/out" >"$tmp/csv_body"
    sed 's/{"index":\([^,]*\),"distance":\([^,]*\),"neighbor":\([^}]*\)}/\1,\2,\3/' \
        "$tmp/profile.json" >"$tmp/json_as_csv"
    same "profile csv rows equal the json values" "$tmp/json_as_csv" "$tmp/csv_body"

    # Progress (progress.h): forced onto a file it prints lines with the share done
    # and a last line; -q silences it; the results stay the same. On the CPU backend:
    # under CUDA only the profile reports its share (PD3 and MK on the GPU do not yet).
    for cmd in profile discord motif; do
        run "$cmd" -m $M --progress --threads 1 --backend cpu "$tmp/walk.txt"
        cp "$tmp/out" "$tmp/with_progress"
        if [ "$rc" -eq 0 ] && grep -Eq "^tsmine: $cmd: ([a-z]+( [0-9]+)?: )?[0-9.]+% \(" "$tmp/err" &&
            tail -1 "$tmp/err" | grep -Eq "^tsmine: $cmd: done in [0-9.]+ s$"; then
            ok "$cmd --progress: lines with the share done, then the time"
        else
            not_ok "$cmd --progress: lines with the share done, then the time" \
                "exit $rc: $(errtext)"
        fi
        run "$cmd" -m $M -q --progress --threads 1 --backend cpu "$tmp/walk.txt"
        if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ]; then
            ok "$cmd -q: no progress"
        else
            not_ok "$cmd -q: no progress" "exit $rc: $(errtext)"
        fi
        same "$cmd --progress: the same results" "$tmp/out" "$tmp/with_progress"
        # the same lines from the CUDA backend, where there is one (a GPU machine)
        run "$cmd" -m $M --progress --backend cuda "$tmp/walk.txt"
        if [ "$rc" -eq 69 ]; then
            skip "$cmd --progress on CUDA" "no CUDA backend here"
        elif [ "$rc" -eq 0 ] && grep -Eq "^tsmine: $cmd: ([a-z]+( [0-9]+)?: )?[0-9.]+% \(" "$tmp/err"; then
            ok "$cmd --progress on CUDA: lines with the share done"
        else
            not_ok "$cmd --progress on CUDA: lines with the share done" "exit $rc: $(errtext)"
        fi
    done

    if "$TSMINE" --help | grep -q "^  detect "; then
        run detect --progress "$tmp/walk.txt"
        if [ "$rc" -eq 0 ] && grep -Eq "^tsmine: detect: walk: [0-9.]+% \(" "$tmp/err" &&
            tail -1 "$tmp/err" | grep -Eq "^tsmine: detect: done in [0-9.]+ s$"; then
            ok "detect --progress: the samples fed, then the time"
        else
            not_ok "detect --progress: the samples fed, then the time" "exit $rc: $(errtext)"
        fi
    fi

    # Binary arrays: the same distances and neighbours as the text lines, bit for bit
    # (numpy.load when python3-numpy is there, else the .npy header parsed here).
    run profile -m $M --left --format npy -o "$tmp/p.npy" "$tmp/walk.csv"
    run profile -m $M --left --format f64 -o "$tmp/p.f64" "$tmp/walk.csv"
    run profile -m $M --left --format json "$tmp/walk.txt"
    if [ "$rc" -eq 0 ] && python3 - "$tmp" <<'EOF3'; then
import json, math, struct, sys
d = sys.argv[1]
rows = [json.loads(line) for line in open(d + "/out")]
want_d = [r["distance"] for r in rows]
want_i = [r["neighbor"] for r in rows]

def load_npy(path):
    try:
        import numpy
        return numpy.load(path).tolist()
    except ImportError:
        b = open(path, "rb").read()
        assert b[:8] == b"\x93NUMPY\x01\x00"
        hlen = struct.unpack("<H", b[8:10])[0]
        head = eval(b[10:10 + hlen].decode("latin1"))
        assert (10 + hlen) % 64 == 0 and head["fortran_order"] is False
        code = {"<f8": "d", "<i8": "q"}[head["descr"]]
        return list(struct.unpack("<%d%s" % (head["shape"][0], code), b[10 + hlen:]))

def raw(path):
    b = open(path, "rb").read()
    return list(struct.unpack("<%dd" % (len(b) // 8), b))

def same_d(got):  # null in JSON: inf (no left neighbour yet) in the arrays
    return len(got) == len(want_d) and all(
        (w is None and math.isinf(g)) or w == g for g, w in zip(got, want_d))

ok = same_d(load_npy(d + "/p.npy")) and load_npy(d + "/p.neighbor.npy") == want_i
ok = ok and same_d(raw(d + "/p.f64")) and raw(d + "/p.neighbor.f64") == [float(i) for i in want_i]
sys.exit(0 if ok else 1)
EOF3
        ok "profile --format npy|f64 -o: the arrays hold the text lines' values exactly"
    else
        not_ok "profile --format npy|f64 -o: the arrays hold the text lines' values exactly" \
            "exit $rc: $(errtext)"
    fi
    expect_err "profile --format npy without -o -> 64" 64 "give -o OUT" \
        profile -m $M --format npy "$tmp/walk.txt"
    expect "profile -o without --format npy|f64 -> 64" 64 profile -m $M -o "$tmp/x" "$tmp/walk.txt"
    expect "discord --format npy -> 64" 64 discord -m $M --format npy -o "$tmp/x" "$tmp/walk.txt"
    expect_err "profile -o into a missing folder -> 73" 73 "cannot create" \
        profile -m $M --format npy -o "$tmp/no/dir/p.npy" "$tmp/walk.txt"

    run profile -m $M --left "$tmp/walk.csv"
    lines_are "profile --left prints n-m+1 lines" "$SUBS" \
        "^\{\"index\":[0-9]+,\"distance\":($NUM|null),\"neighbor\":-?[0-9]+($TS)?\}$"
    holds "profile --left: undefined before excl, neighbours to the left" \
        'NR <= m && ($4 != "null" || $6 != -1) { bad = 1 } NR > m && $6 > $2 - m { bad = 1 }'

    # Missing values: NaN at 100..102 and inf at 300..301 leave M+2 and M+1
    # subsequences undefined.
    run profile -m $M "$tmp/gaps.csv"
    holds "NaN and inf in the input: exactly the subsequences over them print null" \
        '{ gap = ($2 >= 100 - m + 1 && $2 <= 102) || ($2 >= 300 - m + 1 && $2 <= 301) }
         gap != ($4 == "null" && $6 == -1) { bad = 1 }'

    run discord -m $M -k 3 "$tmp/walk.csv"
    cp "$tmp/out" "$tmp/discord.json"
    strip_ts "$tmp/discord.json"
    lines_are "discord -k 3 prints 3 lines of rank, index, distance, neighbor" 3 "$DISCORD_LINE"
    holds "discord ranks are 1..3, best first" \
        '$2 != NR || (NR > 1 && $6 > prev) { bad = 1 } { prev = $6 }'
    holds "top discord is the planted anomaly" \
        "NR == 1 && !(\$4 > $ANOM - m && \$4 < $ANOM + 16) { bad = 1 }"
    for f in walk.npy walk.f64; do
        run discord -m $M -k 3 "$tmp/$f"
        same "discord of $f equals that of walk.csv" "$tmp/discord.json" "$tmp/out"
    done

    # Range discords at the third discord's distance: in index order, all >= r, and
    # the top discord among them.
    r=$(awk -F'[:,}]' 'NR == 3 { print $6 }' "$tmp/discord.json")
    top=$(awk -F'[:,}]' 'NR == 1 { print $4 }' "$tmp/discord.json")
    run discord -m $M -r "${r:-0}" "$tmp/walk.csv"
    holds "discord -r: ranks 1.., index order, distances >= r" \
        "\$2 != NR || (NR > 1 && \$4 <= prev) || \$6 < ${r:-0} { bad = 1 } { prev = \$4 }"
    holds "discord -r includes the top discord" \
        "\$4 == ${top:--1} { seen = 1 } END { if (!seen) bad = 1 }"

    # An empty result says why on stderr, and exits 0.
    head -$M "$tmp/walk.txt" >"$tmp/just_m.txt"
    for cmd in discord motif; do
        run "$cmd" -m $M "$tmp/just_m.txt"
        if [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] &&
            grep -q "^tsmine: $cmd: no .*: n = $M values give 1 subsequence of length $M" "$tmp/err"; then
            ok "$cmd with n = m: no result, and a line on stderr says why"
        else
            not_ok "$cmd with n = m: no result, and a line on stderr says why" "exit $rc: $(errtext)"
        fi
    done
    run discord -m $M -r 1000 "$tmp/walk.txt"
    if [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && grep -q "distance >= 1000" "$tmp/err"; then
        ok "discord -r above every distance: says so"
    else
        not_ok "discord -r above every distance: says so" "exit $rc: $(errtext)"
    fi

    run discord -m $M -k 3 --format csv "$tmp/walk.csv"
    csv_header_is "discord --format csv: header and 3 rows" \
        "rank,index,distance,neighbor,timestamp,neighbor_timestamp" 3

    run motif -m $M -k 2 "$tmp/walk.csv"
    lines_are "motif -k 2 prints 2 lines of rank, a, b, distance" 2 "$MOTIF_LINE"
    holds "motif pairs: ranks 1.., a < b, b - a >= excl, best first" \
        '$2 != NR || !($4 < $6 && $6 - $4 >= m) || (NR > 1 && $8 < prev) { bad = 1 } { prev = $8 }'
    run motif -m $M --format csv "$tmp/walk.csv"
    csv_header_is "motif --format csv: header and 1 row" "rank,a,b,distance,a_timestamp,b_timestamp" 1
fi

# motif --method auto on exact repeats (a spike train, where many pairs tie at distance
# 0 and the scan and MK rank them by their own roundings): MK's pairs, and -v says so.
awk 'BEGIN { for (i = 0; i < 4000; i++) print (i % 100 == 7 ? 5 : 0) }' >"$tmp/spikes.txt"
run motif -m 100 --excl 25 -k 3 --method mk "$tmp/spikes.txt"
cp "$tmp/out" "$tmp/spikes_mk"
run motif -m 100 --excl 25 -k 3 -v "$tmp/spikes.txt"
if cmp -s "$tmp/out" "$tmp/spikes_mk" && grep -q 'motif: MK (--method auto' "$tmp/err"; then
    ok "motif --method auto on exact repeats: MK's pairs, named by -v"
else
    not_ok "motif --method auto on exact repeats: MK's pairs, named by -v" \
        "auto: $(head -c 200 "$tmp/out" | tr '\n' '|') mk: $(head -c 200 "$tmp/spikes_mk" | tr '\n' '|')"
fi

# The bundled NAB series (a header row, 22695 values).
M=128
run discord -m $M -k 3 "$NAB"
lines_are "NAB machine temperature: discord -k 3" 3 "$DISCORD_LINE"
holds "NAB machine temperature: discord ranks 1..3" '$2 != NR { bad = 1 }'
run motif -m $M "$NAB"
lines_are "NAB machine temperature: motif" 1 "$MOTIF_LINE"
run profile -m $M --format csv "$NAB"
csv_header_is "NAB machine temperature: profile csv rows" \
    "index,distance,neighbor,timestamp,neighbor_timestamp" \
    $((22695 - M + 1))

# ---- -m auto: m from the series' dominant period (kernels/period.h) ------------------

# auto_m NAME WANT_RE ARGS...: `tsmine ARGS` (with -m auto) succeeds, says on stderr
# "CMD: -m auto: m = M (...)" matching WANT_RE, and prints exactly what the same command
# with -m M prints. Sets $auto_m to M.
auto_m() {
    name=$1
    want=$2
    shift 2
    run "$@"
    cp "$tmp/out" "$tmp/auto.out"
    auto_m=$(sed -n 's/^tsmine: [a-z]*: -m auto: m = \([0-9]*\) .*/\1/p' "$tmp/err")
    if [ "$rc" -ne 0 ] || [ -z "$auto_m" ] || ! grep -Eq -- "$want" "$tmp/err"; then
        not_ok "$name" "exit $rc, want a line matching '$want'; stderr: $(errtext)"
        return
    fi
    ok "$name"
    # The same arguments with -m auto replaced by -m M.
    explicit=""
    for arg in "$@"; do
        if [ "$arg" = auto ]; then arg=$auto_m; fi
        explicit="$explicit $arg"
    done
    # shellcheck disable=SC2086 # the arguments are words without blanks
    run $explicit
    same "$name: output equals that of -m $auto_m" "$tmp/auto.out" "$tmp/out"
}

expect_err "-m autox -> 64" 64 "-m: invalid value 'autox'" discord -m autox x.csv
# A sine of period 48 in noise, 3000 values (awk: no python3 needed).
awk 'BEGIN { srand(7); for (i = 0; i < 3000; i++)
    printf "%.6f\n", sin(6.283185307179586 * i / 48) + 0.3 * (rand() - 0.5) }' \
    >"$tmp/period48.txt"
auto_m "discord -m auto: a period-48 sine gets m = 48" \
    "^tsmine: discord: -m auto: m = 48 \(period 48\)$" discord -m auto -k 2 "$tmp/period48.txt"
auto_m "motif -m auto on the same series" "m = 48 \(period 48\)" motif -m auto "$tmp/period48.txt"
auto_m "profile -m auto --excl 10 keeps the given exclusion zone" "m = 48 \(period 48\)" \
    profile -m auto --excl 10 --format csv "$tmp/period48.txt"
run discord -m auto -v "$tmp/period48.txt"
if [ "$rc" -eq 0 ] && grep -q "m = 48 (period 48)" "$tmp/err" &&
    grep -q "n = 3000 values, m = 48," "$tmp/err"; then
    ok "discord -m auto -v: the choice and the sizes"
else
    not_ok "discord -m auto -v: the choice and the sizes" "exit $rc: $(errtext)"
fi
if [ "$have_python" -eq 1 ]; then
    auto_m "discord -m auto: a random walk gets the default m = 100" \
        "^tsmine: discord: -m auto: m = 100 \(no period found: default\)$" \
        discord -m auto "$tmp/walk.csv"
    expect_err "-m auto on 21 values -> 64" 64 "discord: -m auto: 21 values are too few" \
        discord -m auto "$tmp/blank_inside.txt"
fi
# NAB: NYC taxi passengers every 30 minutes (a day is 48 samples); machine temperature
# has no steady cycle.
auto_m "NAB NYC taxi: -m auto finds the daily cycle" "discord: -m auto: m = 48 \(period 48\)" \
    discord -m auto "$DATA/nyc_taxi.csv"
auto_m "NAB machine temperature: -m auto takes the default" "m = 100 \(no period found" \
    discord -m auto "$NAB"

# ---- detect -c: defaults follow the settings given (tsmined.conf(5), issue 28) -------

# A file that sets only a small window runs (the warm-up and hop that are left out fit
# it), in streams.default and in an override; one that also sets a warm-up longer than
# the window is refused, naming both.
if "$TSMINE" --help | grep -q "^  detect "; then
    printf 'streams = { default = { window = 64; }; };\n' >"$tmp/w64.conf"
    printf 'streams = { overrides = ( { match = "period*"; window = 64; } ); };\n' \
        >"$tmp/w64o.conf"
    printf 'streams = { default = { window = 64; warmup = 300; }; };\n' >"$tmp/w64w.conf"
    for conf in w64 w64o; do
        run detect -c "$tmp/$conf.conf" -v "$tmp/period48.txt"
        if [ "$rc" -eq 0 ] && grep -q "^tsmine: detect: period48: 3000 samples, m = " "$tmp/err"; then
            ok "detect -c $conf.conf: only window = 64 set runs"
        else
            not_ok "detect -c $conf.conf: only window = 64 set runs" "exit $rc: $(errtext)"
        fi
    done
    expect_err "detect -c: window = 64 and warmup = 300 -> 65 naming both" 65 \
        "streams.default: warmup must be <= window \(warmup 300, window 64\)" \
        detect -c "$tmp/w64w.conf" "$tmp/period48.txt"
fi

# ---- tsmine sets (sorted multisets, DESIGN 4.5) -------------------------------------

# sets_is NAME WANT: the last run succeeded and printed WANT (keys joined by spaces).
sets_is() {
    got=$(tr '\n' ' ' <"$tmp/out" | sed 's/ $//')
    if [ "$rc" -eq 0 ] && [ "$got" = "$2" ]; then
        ok "$1"
    else
        not_ok "$1" "exit $rc, got '$got', want '$2'; stderr: $(errtext)"
    fi
}

# The example of seed 004, and the other two operations on it.
printf '1\n1\n4\n5\n7\n7\n7\n8\n' >"$tmp/sa.txt"
printf '1\n1\n1\n2\n2\n7\n8\n9\n' >"$tmp/sb.txt"
expect "sets --help exits 0" 0 sets --help
if grep -q "^Usage: tsmine sets " "$tmp/out" && [ ! -s "$tmp/err" ]; then
    ok "sets --help prints its usage on stdout"
else
    not_ok "sets --help prints its usage on stdout"
fi
run --help
if grep -q "^  sets " "$tmp/out"; then
    ok "tsmine --help lists sets"
else
    not_ok "tsmine --help lists sets"
fi
run sets intersect "$tmp/sa.txt" "$tmp/sb.txt"
sets_is "sets intersect: the seed's example" "1 1 7 8"
run sets union "$tmp/sa.txt" "$tmp/sb.txt"
sets_is "sets union: the seed's example" "1 1 1 2 2 4 5 7 7 7 8 9"
run sets difference "$tmp/sa.txt" "$tmp/sb.txt"
sets_is "sets difference: max(0, ca - cb) copies" "4 5 7 7"
run sets symdiff "$tmp/sa.txt" "$tmp/sb.txt"
sets_is "sets symdiff: |ca - cb| copies" "1 2 2 4 5 7 7 9"
run_in "$tmp/sb.txt" sets intersect "$tmp/sa.txt" -
sets_is "sets: B from standard input" "1 1 7 8"
printf '  3\r\n\n5 \n' >"$tmp/spaced.txt"
run sets union "$tmp/spaced.txt" "$tmp/sb.txt"
sets_is "sets: blanks, CRLF and blank lines around keys" "1 1 1 2 2 3 5 7 8 9"
: >"$tmp/empty.txt"
run sets union "$tmp/empty.txt" "$tmp/sb.txt"
sets_is "sets: an empty input is the empty multiset" "1 1 1 2 2 7 8 9"
run sets intersect "$tmp/empty.txt" "$tmp/empty.txt"
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ]; then
    ok "sets: empty result prints nothing"
else
    not_ok "sets: empty result prints nothing" "exit $rc"
fi

# Errors: usage, unsorted input (file, element index and line), bad keys, files.
expect "sets: unknown operation -> 64" 64 sets minus "$tmp/sa.txt" "$tmp/sb.txt"
expect "sets: missing operand -> 64" 64 sets union "$tmp/sa.txt"
expect "sets: extra operand -> 64" 64 sets union "$tmp/sa.txt" "$tmp/sb.txt" "$tmp/sb.txt"
expect "sets: -m is not an option of sets -> 64" 64 sets union -m 8 "$tmp/sa.txt" "$tmp/sb.txt"
expect "sets: --key-width 16 -> 64" 64 sets union --key-width 16 "$tmp/sa.txt" "$tmp/sb.txt"
expect "sets: both inputs from stdin -> 64" 64 sets union - -
printf '1\n2\n\n5\n4\n6\n' >"$tmp/unsorted.txt"
expect_err "sets: unsorted text -> 65 with file, line and index" 65 \
    "^tsmine: $tmp/unsorted.txt:5: not sorted: element 3 is 4, less than 5" \
    sets union "$tmp/sa.txt" "$tmp/unsorted.txt"
printf '1\nx7\n' >"$tmp/notint.txt"
expect_err "sets: not an integer -> 65 with file and line" 65 "^tsmine: $tmp/notint.txt:2: " \
    sets union "$tmp/notint.txt" "$tmp/sb.txt"
printf '%s\n' -3 >"$tmp/negative.txt"
expect "sets: negative key -> 65" 65 sets union "$tmp/negative.txt" "$tmp/sb.txt"
printf '4294967296\n' >"$tmp/big.txt"
expect_err "sets: key above 2^32-1 with --key-width 32 -> 65" 65 "does not fit 32-bit" \
    sets union --key-width 32 "$tmp/big.txt" "$tmp/sb.txt"
printf '18446744073709551616\n' >"$tmp/huge.txt"
expect "sets: key above 2^64-1 -> 65" 65 sets union "$tmp/huge.txt" "$tmp/sb.txt"
run sets union "$tmp/big.txt" "$tmp/sb.txt"
sets_is "sets: 64-bit keys from text by default" "1 1 1 2 2 7 8 9 4294967296"
expect_err "sets: missing input -> 66" 66 "^tsmine: $tmp/nope.txt: No such file" \
    sets union "$tmp/nope.txt" "$tmp/sb.txt"
expect "sets: -o into a missing folder -> 73" 73 sets union -o "$tmp/no/dir/out.txt" \
    "$tmp/sa.txt" "$tmp/sb.txt"
run sets union --backend cuda "$tmp/sa.txt" "$tmp/sb.txt"
if [ "$rc" -eq 69 ] && [ "$(nlines "$tmp/err")" -eq 1 ]; then
    ok "sets --backend cuda without CUDA -> 69"
elif [ "$rc" -eq 0 ]; then
    sets_is "sets --backend cuda: the seed's union" "1 1 1 2 2 4 5 7 7 7 8 9"
else
    not_ok "sets --backend cuda without CUDA -> 69" "exit $rc: $(errtext)"
fi

# Binary inputs and outputs, and a larger random case against a multiset reference.
if [ "$have_python" -eq 1 ] && python3 - "$tmp" <<'EOF2'; then
import collections, os, random, struct, sys
d = sys.argv[1]
rng = random.Random(4004)
def w(name, data, mode="w"):
    with open(os.path.join(d, name), mode) as f:
        f.write(data)
a = sorted(rng.randrange(3000) for _ in range(5000))
b = sorted(rng.randrange(3000) for _ in range(4000))
for name, v in (("ra", a), ("rb", b)):
    w(name + ".txt", "".join("%d\n" % x for x in v))
    w(name + ".u32", struct.pack("<%dI" % len(v), *v), "wb")
    w(name + ".u64", struct.pack("<%dQ" % len(v), *[x << 33 for x in v]), "wb")
ca, cb = collections.Counter(a), collections.Counter(b)
ops = {"intersect": ca & cb, "union": ca | cb, "difference": ca - cb,
       "symdiff": (ca - cb) + (cb - ca)}
for op, c in ops.items():
    w("want_" + op + ".txt", "".join("%d\n" % k for k in sorted(c.elements())))
# An unsorted raw file: the descent at element 3 (byte offset 12).
w("unsorted.u32", struct.pack("<5I", 1, 2, 2, 1, 9), "wb")
w("odd.u32", b"\0" * 6, "wb")
EOF2
    for op in intersect union difference symdiff; do
        run sets "$op" "$tmp/ra.txt" "$tmp/rb.txt"
        same "sets $op of 5000 and 4000 random keys equals the multiset reference" \
            "$tmp/want_$op.txt" "$tmp/out"
        run sets "$op" --threads 1 "$tmp/ra.u32" "$tmp/rb.u32"
        same "sets $op of .u32 inputs (1 thread) equals that of text" "$tmp/want_$op.txt" "$tmp/out"
        run sets "$op" -o "$tmp/res.u32" "$tmp/ra.u32" "$tmp/rb.txt"
        run sets union -o "$tmp/res.txt" "$tmp/res.u32" "$tmp/empty.txt"
        same "sets $op -o OUT.u32 holds the result as raw uint32" "$tmp/want_$op.txt" "$tmp/res.txt"
    done
    run sets union "$tmp/ra.u64" "$tmp/rb.u64" -o "$tmp/res.u64"
    if [ "$rc" -eq 0 ] && python3 - "$tmp" <<'EOF2'; then
import struct, sys
d = sys.argv[1]
got = open(d + "/res.u64", "rb").read()
want = [int(x) << 33 for x in open(d + "/want_union.txt").read().split()]
sys.exit(0 if got == struct.pack("<%dQ" % len(want), *want) else 1)
EOF2
        ok "sets union of .u64 inputs into OUT.u64: 64-bit keys kept"
    else
        not_ok "sets union of .u64 inputs into OUT.u64: 64-bit keys kept" "exit $rc: $(errtext)"
    fi
    expect_err "sets: unsorted .u32 -> 65 with index and byte offset" 65 \
        "^tsmine: $tmp/unsorted.u32: not sorted: element 3 \(byte offset 12\)" \
        sets union "$tmp/unsorted.u32" "$tmp/rb.u32"
    expect_err "sets: .u32 of 6 bytes -> 65" 65 "multiple of 4" sets union "$tmp/odd.u32" \
        "$tmp/rb.u32"
    expect_err "sets: a 64-bit result into OUT.u32 -> 65" 65 "does not fit 32-bit" \
        sets union -o "$tmp/narrow.u32" "$tmp/ra.u64" "$tmp/rb.u64"
else
    skip "sets: binary formats and the random case" "no python3"
fi

# ---- daemon companions: usage and input errors (no daemon needed) -------------------

# Only in builds with the daemon. Nothing listens on port 1, so the endpoints below
# never reach a running tsmined; every error before the socket is opened exits first.
NOWHERE=tcp://127.0.0.1:1
run --help
if grep -q "^  replay " "$tmp/out"; then
    printf '1\n2\n3\n4\n5\n6\n7\n8\n' >"$tmp/few.txt"
    for cmd in replay alerts status; do
        expect "$cmd --help exits 0" 0 "$cmd" --help
        if grep -q "^Usage: tsmine $cmd " "$tmp/out" && grep -q -- "--endpoint" "$tmp/out" &&
            [ ! -s "$tmp/err" ]; then
            ok "$cmd --help prints its usage and options on stdout"
        else
            not_ok "$cmd --help prints its usage and options on stdout"
        fi
        expect_err "$cmd: unknown long option -> 64" 64 \
            "^tsmine: $cmd: unknown or misused option '--no-such-option'" \
            "$cmd" --endpoint $NOWHERE --no-such-option
        expect_err "$cmd: unknown short option in a bundle -> 64" 64 \
            "^tsmine: $cmd: unknown option '-Z'" "$cmd" --endpoint $NOWHERE -vZ
        expect_err "$cmd: option without its argument -> 64" 64 \
            "^tsmine: $cmd: option '--endpoint' needs an argument" "$cmd" --endpoint
        expect "$cmd: --timeout-ms not a number -> 64" 64 \
            "$cmd" --endpoint $NOWHERE --timeout-ms soon
        expect "$cmd: -m is not an option of $cmd -> 64" 64 "$cmd" --endpoint $NOWHERE -m 8
    done
    expect_err "replay: missing FILE -> 64" 64 "^tsmine: replay: missing FILE" \
        replay --endpoint $NOWHERE --stream s1
    expect_err "replay: missing --stream -> 64" 64 "^tsmine: replay: missing --stream ID" \
        replay --endpoint $NOWHERE "$tmp/few.txt"
    expect "replay: two FILEs -> 64" 64 replay --endpoint $NOWHERE --stream s1 \
        "$tmp/few.txt" "$tmp/few.txt"
    expect "replay: empty stream id -> 64" 64 replay --endpoint $NOWHERE --stream "" "$tmp/few.txt"
    expect_err "replay: --resume with --endpoint and no --control -> 64" 64 \
        "^tsmine: replay: --resume asks the daemon's control socket" \
        replay --endpoint $NOWHERE --resume --stream s1 "$tmp/few.txt"
    expect "replay: --rate 0 -> 64" 64 replay --endpoint $NOWHERE --stream s1 --rate 0 \
        "$tmp/few.txt"
    expect "replay: --batch 0 -> 64" 64 replay --endpoint $NOWHERE --stream s1 --batch 0 \
        "$tmp/few.txt"
    expect "replay: --nonfinite drop -> 64" 64 replay --endpoint $NOWHERE --stream s1 \
        --nonfinite drop "$tmp/few.txt"
    expect "alerts: --count 0 -> 64" 64 alerts --endpoint $NOWHERE --count 0
    expect "alerts: an operand -> 64" 64 alerts --endpoint $NOWHERE extra
    expect "status: an operand -> 64" 64 status --endpoint $NOWHERE extra
    expect_err "replay: missing file -> 66" 66 "^tsmine: $tmp/nope.csv: No such file or directory$" \
        replay --endpoint $NOWHERE --stream s1 "$tmp/nope.csv"
    expect_err "replay: directory as input -> 66" 66 "^tsmine: $tmp: " \
        replay --endpoint $NOWHERE --stream s1 "$tmp"
    printf '1\n2\noops\n' >"$tmp/bad.txt"
    expect_err "replay: malformed input -> 65 with FILE:LINE" 65 "^tsmine: $tmp/bad.txt:3: " \
        replay --endpoint $NOWHERE --stream s1 "$tmp/bad.txt"
    # A file's own timestamps must increase: a repeat or a step back is refused before
    # anything is sent, naming the line and the one before (a blank row between is a
    # missing value, not a row with a timestamp).
    printf 'timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,2\n\n2014-04-01 00:05:00,3\n' \
        >"$tmp/repeat.csv"
    expect_err "replay: a repeated timestamp -> 65 naming the line" 65 \
        "^tsmine: replay: $tmp/repeat.csv:5: timestamp '2014-04-01 00:05:00' repeats '2014-04-01 00:05:00' of line 3" \
        replay --endpoint $NOWHERE --stream s1 "$tmp/repeat.csv"
    printf 'time;value\n2014-04-01T00:00:00Z;1\n2014-04-01T00:10:00Z;2\n2014-04-01T01:05:00+01:00;3\n' \
        >"$tmp/back.csv"
    expect_err "replay: a timestamp going back (ISO 8601, an offset) -> 65 naming the line" 65 \
        "^tsmine: replay: $tmp/back.csv:4: timestamp '2014-04-01T01:05:00\+01:00' is before '2014-04-01T00:10:00Z' of line 3" \
        replay --endpoint $NOWHERE --stream s1 "$tmp/back.csv"
    expect_err "replay: --timestamps now refuses it as well -> 65" 65 "$tmp/back.csv:4: " \
        replay --endpoint $NOWHERE --stream s1 --timestamps now "$tmp/back.csv"
    expect_err "replay: --backwards hold sends it (no daemon -> 69)" 69 "no daemon took" \
        replay --endpoint $NOWHERE --stream s1 --backwards hold --timeout-ms 200 "$tmp/back.csv"
    expect_err "replay: --timestamps period numbers it (no daemon -> 69)" 69 "no daemon took" \
        replay --endpoint $NOWHERE --stream s1 --timestamps period --timeout-ms 200 "$tmp/back.csv"
    printf 'timestamp,value\n1396310400,1\n1396310400.5,2\nsoon,3\n' >"$tmp/notime.csv"
    expect_err "replay: a timestamp that is not one -> 65 naming the line" 65 \
        "^tsmine: replay: $tmp/notime.csv:4: 'soon' is not a timestamp" \
        replay --endpoint $NOWHERE --stream s1 "$tmp/notime.csv"
    expect_err "replay: --timestamps file without a timestamp column -> 64" 64 \
        "^tsmine: replay: --timestamps file: $tmp/few.txt has no timestamp column" \
        replay --endpoint $NOWHERE --stream s1 --timestamps file "$tmp/few.txt"
    expect_err "replay: --period-ns with --timestamps now -> 64" 64 \
        "^tsmine: replay: --period-ns goes with --timestamps period" \
        replay --endpoint $NOWHERE --stream s1 --timestamps now --period-ns 5 "$tmp/back.csv"
    expect "replay: --timestamps soon -> 64" 64 replay --endpoint $NOWHERE --stream s1 \
        --timestamps soon "$tmp/back.csv"
    expect "replay: --backwards skip -> 64" 64 replay --endpoint $NOWHERE --stream s1 \
        --backwards skip "$tmp/back.csv"
    # No daemon: each gives up after --timeout-ms with one line naming the endpoint.
    expect_err "status: no daemon -> 69 naming the endpoint" 69 \
        "^tsmine: status: $NOWHERE: no reply within 200 ms \(is tsmined running" \
        status --endpoint $NOWHERE --timeout-ms 200
    expect_err "replay: no daemon -> 69 naming the endpoint" 69 \
        "^tsmine: replay: $NOWHERE: no daemon took a message within 200 ms" \
        replay --endpoint $NOWHERE --stream s1 --timeout-ms 200 "$tmp/few.txt"
    expect_err "alerts: --count not reached -> 75" 75 "^tsmine: alerts: $NOWHERE: 0 of 1 alerts" \
        alerts --endpoint $NOWHERE --count 1 --timeout-ms 200
else
    skip "daemon companions" "this build has no daemon (tsmine --help lists no replay)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
