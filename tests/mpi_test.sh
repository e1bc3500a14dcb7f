#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# mpi_test.sh TSMINE MPIEXEC - the batch commands under MPI (issue 21, tools/cli/dist.h)
# give byte for byte the single-process output: profile, discord (top-k and range),
# motif (the scan, and MK with --method mk). The backend is tsmine's default: CUDA where
# a GPU is (every rank on the GPUs it sees: all on one GPU of a one-GPU machine, which
# proves the split and its exactness), else the CPU.
#
# Generates series with python3 (standard library only): a random walk whose length
# the ranks do not divide, one with planted anomalies, one with NaN, Inf and constant
# stretches, and one so short that some ranks get no band of the profile (no PD3
# segment). Runs each command once alone and under MPIEXEC with 2, 3 and 4 CPU ranks
# (and once with 1; oversubscribed, one OpenMP thread each) and compares the outputs
# with cmp. Prints `ok - NAME` or `not ok - NAME` per check, then `N passed, M failed`;
# exits 77 (skip) when MPIEXEC is missing, non-zero when a check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 TSMINE MPIEXEC" >&2
    exit 64
fi
TSMINE=$1
MPIEXEC=$2
if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
    echo "SKIP: no MPI launcher ($MPIEXEC)"
    exit 77
fi
# Open MPI: more ranks than cores, as root (CI), and no cross-memory attach (denied
# in containers). MPICH's Hydra needs none of these.
launch_opts=""
if "$MPIEXEC" --version 2>&1 | grep -Eq "Open MPI|OpenRTE"; then
    launch_opts="--oversubscribe --allow-run-as-root"
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
fi
export OMP_NUM_THREADS=1
# Sanitizer builds (tools/dev test --sanitize): the ranks keep AddressSanitizer's checks
# but not LeakSanitizer's, which reports the MPI library's own allocations, made by
# plugins unloaded before the report (no module name to suppress them by).
mpi_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

passed=0
failed=0

# series NAME N KIND: writes $tmp/NAME.txt, n values of a seeded random walk; KIND
# planted adds three anomalies, gaps adds NaN, Inf and constant stretches.
series() {
    python3 - "$tmp/$1.txt" "$2" "$3" <<'PY'
import math, random, sys
path, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
random.seed(n)
x, t = 0.0, []
for _ in range(n):
    x += random.gauss(0, 1)
    t.append(x)
if kind == "planted":
    for at, length, amp in ((n // 5, 40, 6.0), (n // 2, 64, 9.0), (n - 60, 50, 4.0)):
        for k in range(length):
            t[at + k] += amp * math.sin(math.pi * k / length)
if kind == "gaps":
    for k in range(n // 7, n // 7 + 30):
        t[k] = float("nan")
    t[n // 3] = float("inf")
    for at in (n // 2, n // 2 + 200, n - 50):
        for k in range(at, at + 45):
            t[k] = 1.5
with open(path, "w") as f:
    for v in t:
        f.write("nan\n" if v != v else "%r\n" % v)
PY
}

# check NAME ARGS...: `tsmine ARGS` alone and under 2, 3, 4 ranks, outputs equal.
check() {
    name=$1
    shift
    if ! "$TSMINE" "$@" >"$tmp/one" 2>"$tmp/err"; then
        failed=$((failed + 1))
        echo "not ok - $name (single process failed: $(head -1 "$tmp/err"))"
        return
    fi
    for ranks in $rank_counts; do
        # shellcheck disable=SC2086 # launch_opts is a list of options
        if ! ASAN_OPTIONS=$mpi_asan "$MPIEXEC" $launch_opts -n "$ranks" "$TSMINE" "$@" \
            >"$tmp/many" 2>"$tmp/err"; then
            failed=$((failed + 1))
            echo "not ok - $name, $ranks ranks (exit status; $(head -1 "$tmp/err"))"
        elif ! cmp -s "$tmp/one" "$tmp/many"; then
            failed=$((failed + 1))
            echo "not ok - $name, $ranks ranks (output differs)"
            diff "$tmp/one" "$tmp/many" | head -4 | sed 's/^/#   /'
        else
            passed=$((passed + 1))
            echo "ok - $name, $ranks ranks"
        fi
    done
}

# Rank counts of each check; one rank under the launcher takes the distributed path
# alone (checked once).
rank_counts="1 2 3 4"
series walk 3001 walk
series planted 2503 planted
series gaps 2000 gaps
series short 100 walk

for s in walk planted gaps; do
    f=$tmp/$s.txt
    check "profile $s" profile -m 32 "$f"
    rank_counts="2 3 4"
    check "profile --left $s" profile -m 32 --left "$f"
    check "profile --excl 7 csv $s" profile -m 25 --excl 7 --format csv "$f"
done
check "profile short (ranks without bands)" profile -m 8 "$tmp/short.txt"
for s in walk planted gaps; do
    f=$tmp/$s.txt
    check "discord -k 3 $s" discord -m 32 -k 3 "$f"
    check "discord -r 3.5 --seglen 100 $s" discord -m 32 -r 3.5 --seglen 100 "$f"
done
check "discord short (ranks without segments)" discord -m 8 -k 2 "$tmp/short.txt"
for s in walk planted gaps; do
    f=$tmp/$s.txt
    check "motif -k 3 $s" motif -m 32 -k 3 "$f"
done
check "motif --excl 10 walk" motif -m 20 --excl 10 -k 2 "$tmp/walk.txt"
check "motif short" motif -m 8 -k 2 "$tmp/short.txt"
check "motif --method mk -k 3 planted" motif --method mk -m 32 -k 3 "$tmp/planted.txt"
check "motif --method mk --refs 3 --excl 10 walk" motif --method mk -m 20 --refs 3 --excl 10 \
    -k 2 "$tmp/walk.txt"

# Standard input reaches rank 0 only: refused by every rank at once, not left to hang
# (rank 0 waiting for the others, or on MPICH the others blocked on their stdin pipe).
# shellcheck disable=SC2086 # launch_opts is a list of options
ASAN_OPTIONS=$mpi_asan timeout 120 "$MPIEXEC" $launch_opts -n 2 "$TSMINE" profile -m 8 - \
    <"$tmp/short.txt" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    failed=$((failed + 1))
    echo "not ok - standard input refused (exit status $rc; 124: it hung)"
else
    passed=$((passed + 1))
    echo "ok - standard input refused (exit status $rc)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
