#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shapelet_cli_test.sh TSMINE UCRDIR - `tsmine shapelet train|predict|show` driven
# through its real interface on the committed UCR data (tests/data/ucr) and on
# malformed files: exit codes, FILE:LINE messages, the last JSON line of train, the
# labels and accuracy of predict agreeing with train's test accuracy, show's nodes.
# Prints `ok - NAME` / `not ok - NAME` per check and exits non-zero on any failure.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 TSMINE UCRDIR" >&2
    exit 64
fi
TSMINE=$1
UCR=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-shapelet.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() { # check NAME COND...: runs the condition command
    name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok - $name"
    else
        failed=$((failed + 1))
        echo "not ok - $name"
    fi
}

# expect_exit NAME CODE PATTERN CMD...: CMD exits CODE and its stderr matches PATTERN
expect_exit() {
    name=$1 code=$2 pattern=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq "$code" ] && grep -q -- "$pattern" "$tmp/err"; then
        passed=$((passed + 1))
        echo "ok - $name"
    else
        failed=$((failed + 1))
        echo "not ok - $name"
        echo "#   exit $rc (want $code); stderr: $(head -c 300 "$tmp/err")"
    fi
}

TR=$UCR/UnitTest_TRAIN.ts
TE=$UCR/UnitTest_TEST.ts
"$TSMINE" shapelet train --train "$TR" --test "$TE" --backend cpu -o "$tmp/m.json" \
    >"$tmp/train.out" 2>"$tmp/train.err"
check "train exits 0" [ $? -eq 0 ]
last=$(tail -n 1 "$tmp/train.out")
check "train prints the JSON summary last" sh -c "echo '$last' | grep -Eq \
'^\\{\"train_accuracy\":[0-9.]+,\"test_accuracy\":[0-9.]+,\"seconds\":[0-9.]+,\"shapelets\":[0-9]+\\}$'"
check "train reports on stderr" grep -q "shapelet train:" "$tmp/train.err"
test_acc=$(echo "$last" | sed 's/.*"test_accuracy":\([0-9.]*\).*/\1/')

"$TSMINE" shapelet predict --model "$tmp/m.json" "$TE" >"$tmp/pred.out" 2>"$tmp/pred.err"
check "predict exits 0" [ $? -eq 0 ]
n_data=$(sed -n '/@data/,$p' "$TE" | grep -c ':')
check "predict prints one label per series" [ "$(grep -vc accuracy "$tmp/pred.out")" -eq "$n_data" ]
check "predict accuracy equals train's test accuracy" \
    grep -q "^{\"accuracy\":$test_acc}\$" "$tmp/pred.out"

"$TSMINE" shapelet show --model "$tmp/m.json" >"$tmp/show.out"
check "show prints the root" grep -q '^\[0\]' "$tmp/show.out"
"$TSMINE" shapelet show --model "$tmp/m.json" --format json >"$tmp/show.json"
check "show --format json: one object per node" grep -q '^{"id":0,"leaf":' "$tmp/show.json"

# logical shapelets: a node joins two shapelets by AND/OR; saved, shown and applied
"$TSMINE" shapelet train --train "$TR" --test "$TE" --backend cpu --logical -o "$tmp/l.json" \
    >"$tmp/logical.out" 2>/dev/null
check "train --logical exits 0" [ $? -eq 0 ]
check "the model holds a logical node" grep -q '"op":"\(and\|or\)","series2":' "$tmp/l.json"
"$TSMINE" shapelet show --model "$tmp/l.json" >"$tmp/lshow.out"
check "show prints the second shapelet" grep -Eq '^ *(AND|OR) shapelet from series' "$tmp/lshow.out"
l_acc=$(tail -n 1 "$tmp/logical.out" | sed 's/.*"test_accuracy":\([0-9.]*\).*/\1/')
"$TSMINE" shapelet predict --model "$tmp/l.json" "$TE" >"$tmp/lpred.out" 2>/dev/null
check "predict with a logical model equals train's test accuracy" \
    grep -q "^{\"accuracy\":$l_acc}\$" "$tmp/lpred.out"

# the .tsv reader on the same data (label first), converted here
sed -n '/@data/,$p' "$TR" | tail -n +2 | awk -F: '{gsub(",", "\t", $1); print $2 "\t" $1}' \
    >"$tmp/train.tsv"
"$TSMINE" shapelet train --train "$tmp/train.tsv" --backend cpu >"$tmp/tsv.out" 2>/dev/null
check "train on .tsv gives the same tree size" \
    [ "$(sed 's/.*"shapelets"://' "$tmp/tsv.out")" = "$(echo "$last" | sed 's/.*"shapelets"://')" ]

printf '1\t1\t2\t3\n2\t1\t2\n' >"$tmp/bad.tsv"
expect_exit "ragged .tsv: exit 65 with file:line" 65 "bad.tsv:2: 2 values, expected 3" \
    "$TSMINE" shapelet train --train "$tmp/bad.tsv"
printf '@classLabel true a b\n@data\n1,2,3,4:a\n1,2,3,x:b\n' >"$tmp/bad.ts"
expect_exit "bad value in .ts: exit 65 with file:line" 65 "bad.ts:4: value 4" \
    "$TSMINE" shapelet train --train "$tmp/bad.ts"
expect_exit "missing file: exit 66" 66 "nope.ts" "$TSMINE" shapelet train --train "$tmp/nope.ts"
printf '{"format":"tsmine-shapelet-tree",\n"version":2}' >"$tmp/bad.json"
expect_exit "bad model: exit 65" 65 "bad.json: unsupported model version" \
    "$TSMINE" shapelet predict --model "$tmp/bad.json" "$TE"
expect_exit "min-len above max-len: exit 64" 64 "min_len" \
    "$TSMINE" shapelet train --train "$TR" --min-len 9 --max-len 5
expect_exit "missing --train: exit 64" 64 "--train FILE is required" "$TSMINE" shapelet train
expect_exit "unknown subcommand: exit 64" 64 "unknown subcommand" "$TSMINE" shapelet fit
expect_exit "predict without DATA: exit 64" 64 "expects one DATA file" \
    "$TSMINE" shapelet predict --model "$tmp/m.json"
"$TSMINE" shapelet train --help >"$tmp/help" 2>&1
check "train --help lists --dtw-window" grep -q -- "--dtw-window" "$tmp/help"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
