#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# rebuild_test.sh SOURCE BUILD: a second `tools/dev build` with nothing changed builds
# nothing (issue 34 item 2). The suite runs on an up-to-date BUILD, so this configures it
# again from SOURCE with its cache, as tools/dev does before every build, then builds it,
# and fails when that compiled, linked or generated any file: the objects, and every file
# outside CMake's bookkeeping (CMakeFiles/, an ExternalProject's -prefix/, ctest's
# Testing/), written after the configure. Failing, it lists what was rebuilt and the
# targets whose compile or link commands the configure changed (their flags.make,
# link.txt, or build.ninja: the cause of a rebuild of whole targets).
# Cost: a configure from the cache and a build with nothing to do, a few seconds. Run
# alone (RUN_SERIAL), as a failure rewrites the programs other tests run; ctest on a
# BUILD left out of date by an edit fails here too, after building it.
set -eu
src=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rebuild_test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# commands: a checksum of every file that holds a compile or link command line
commands() {
    (cd "$build" && find . \( -name flags.make -o -name link.txt -o -name build.ninja \) \
        -type f ! -path './fuzz-build/*' -exec md5sum {} + | LC_ALL=C sort -k 2)
}

commands >"$work/before"
if ! cmake -S "$src" -B "$build" >"$work/log" 2>&1; then
    echo "rebuild_test: configuring $build again failed:" >&2
    cat "$work/log" >&2
    exit 1
fi
commands >"$work/after"
touch "$work/stamp"
# Ninja says why it reruns each edge (-d explain), which the failure report shows.
explain=""
[ ! -f "$build/build.ninja" ] || explain="-- -d explain"
# shellcheck disable=SC2086 # explain is two words or none
if ! cmake --build "$build" $explain >>"$work/log" 2>&1; then
    echo "rebuild_test: building $build again failed:" >&2
    tail -n 40 "$work/log" >&2
    exit 1
fi

(cd "$build" && find . -type f -newer "$work/stamp" \
    \( -name '*.o' -o -name '*.obj' -o \( ! -path '*/CMakeFiles/*' ! -path '*-prefix/*' \
    ! -path './Testing/*' ! -name '.ninja_*' \) \) | LC_ALL=C sort) >"$work/rebuilt"
n=$(wc -l <"$work/rebuilt")
if [ "$n" -eq 0 ]; then
    echo "rebuild_test: configured and built $build again: nothing compiled, linked or generated"
    exit 0
fi
echo "rebuild_test: a rebuild with nothing changed wrote $n files in $build:" >&2
head -n 40 "$work/rebuilt" >&2
[ "$n" -le 40 ] || echo "  ... and $((n - 40)) more" >&2
if ! cmp -s "$work/before" "$work/after"; then
    echo "rebuild_test: the configure alone changed the commands of:" >&2
    diff "$work/before" "$work/after" | sed -n 's/^> [0-9a-f]*  /  /p' >&2
fi
echo "rebuild_test: the build's output:" >&2
grep -v -e 'Built target' -e 'ninja explain' "$work/log" | tail -n 40 >&2
if grep -q 'ninja explain' "$work/log"; then
    echo "rebuild_test: why Ninja reran them (the first 20 reasons):" >&2
    grep 'ninja explain' "$work/log" | grep -v ' is dirty$' | head -n 20 >&2
fi
exit 1
