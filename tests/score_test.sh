#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# score_test.sh TSMINE - end-to-end test of `tsmine score`, the NAB scorer, through the
# real binary: a tiny windows file and data folder made in a temporary folder, alert
# streams whose scores are worked out by hand below, and the exit code and one-line
# message of every error class (usage 64, malformed input 65 with FILE:LINE, missing
# input 66). Prints `ok - NAME` or `not ok - NAME` per check, then `N passed, M failed`;
# exits non-zero when any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 TSMINE" >&2
    exit 64
fi
TSMINE=$1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-score.XXXXXX") || exit 1
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

# run ARGS...: runs tsmine score; stdout in $tmp/out, stderr in $tmp/err, status in $rc.
run() {
    "$TSMINE" score "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

errtext() { head -c 300 "$tmp/err" | tr '\n' '|'; }

# expect_err NAME CODE PATTERN ARGS...: tsmine score ARGS exits CODE with exactly one
# stderr line, "tsmine: score: ..." matching PATTERN (grep -E).
expect_err() {
    name=$1
    want=$2
    pat=$3
    shift 3
    run "$@"
    if [ "$rc" -ne "$want" ]; then
        not_ok "$name" "exit $rc, want $want; stderr: $(errtext)"
    elif [ "$(wc -l <"$tmp/err" | tr -d ' ')" -ne 1 ] || ! grep -q '^tsmine: score: ' "$tmp/err"; then
        not_ok "$name" "want one 'tsmine: score: ' line on stderr, got: $(errtext)"
    elif ! grep -Eq -- "$pat" "$tmp/err"; then
        not_ok "$name" "stderr does not match '$pat': $(errtext)"
    else
        ok "$name"
    fi
}

# value LINE FIELD: the value of FIELD (a number, null or true) on line LINE of $tmp/out.
value() {
    sed -n "${1}p" "$tmp/out" | sed -nE "s/.*\"$2\":(-?[0-9][0-9.eE+-]*|null|true).*/\1/p"
}

# expect_values NAME LINE FIELD=VALUE...: each field of output line LINE equals VALUE
# (numbers within 1e-9; null as the word).
expect_values() {
    name=$1
    line=$2
    shift 2
    if [ "$rc" -ne 0 ]; then
        not_ok "$name" "exit $rc; stderr: $(errtext)"
        return
    fi
    for fv in "$@"; do
        f=${fv%%=*}
        want=${fv#*=}
        got=$(value "$line" "$f")
        if [ "$want" = null ] || [ "$got" = null ]; then
            [ "$got" = "$want" ] && continue
        elif [ -n "$got" ] && awk -v a="$got" -v b="$want" \
            'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9) }'; then
            continue
        fi
        not_ok "$name" "line $line: \"$f\" is '$got', want $want: $(sed -n "${line}p" "$tmp/out")"
        return
    done
    ok "$name"
}

# ---- the corpus ----------------------------------------------------------------------
# a/x.csv and b/y.csv: 20 rows each, 5 minutes apart from 2020-01-01 00:00:00, so row k
# is at minute 5k. x has one window, rows 10..13 (00:50 .. 01:05, width 4); y none.
# Probation: floor(0.15 * 20) = 3 rows.
mkdir -p "$tmp/data/a" "$tmp/data/b" "$tmp/data/c"
for f in a/x b/y; do
    {
        echo "timestamp,value"
        k=0
        while [ $k -lt 20 ]; do
            printf '2020-01-01 %02d:%02d:00,%d\n' $((k * 5 / 60)) $((k * 5 % 60)) $k
            k=$((k + 1))
        done
    } >"$tmp/data/$f.csv"
done
cp "$tmp/data/a/x.csv" "$tmp/data/c/x.csv"
W=$tmp/windows.json
cat >"$W" <<'EOF'
{
 "a/x.csv": [
  ["2020-01-01 00:50:00.000000", "2020-01-01 01:05:00.000000"]
 ],
 "b/y.csv": []
}
EOF

# The alerts: (1) an ANOMALY of x whose subsequence 7..10 completes at row 10, the
# window's first row, score 0.8; (2) a DISCORD of y detected at row 6, score 0.5: a
# false alert before any window (-0.11); (3) a MOTIF of x detected at row 12 (no
# score: 1); (4) a stream that has no file.
A=$tmp/alerts.jsonl
cat >"$A" <<'EOF'
{"alert_id":1,"stream_id":"nab/x","kind":"ANOMALY","start_seq":7,"length":4,"score":0.8}

{"alert_id":2,"stream_id":"y.csv","kind":"DISCORD","start_seq":5,"length":1,"detected_seq":6,"score":0.5}
{"alert_id":3,"stream_id":"a/x","kind":"MOTIF","start_seq":11,"length":2,"detected_seq":12,"score":null}
{"alert_id":4,"stream_id":"zzz","kind":"DISCORD","start_seq":1,"length":1}
EOF

# Defaults (ANOMALY, DISCORD at the detecting row). Thresholds: 1.1 -> -1 (the window
# missed); 0.8 -> 1 (hit at its first row); 0.5 -> 1 - 0.11 = 0.89; 0 -> every row,
# far worse. NAB picks 0.8: standard 100 (raw 1, null -1, perfect 1). As published
# both alerts count: 0.89, 100 (0.89 + 1) / 2 = 94.5. reward_low_FN_rate: null -2,
# as published 100 (0.89 + 2) / 3 = 96.333...
run --windows "$W" --data "$tmp/data" "$A"
expect_values "standard: NAB threshold drops the false alert" 1 score=100 raw=1 null=-1 \
    perfect=1 threshold=0.8 score_as_published=94.5 raw_as_published=0.89 windows_hit=1 \
    detections=1 false_detections=0
expect_values "reward_low_FP_rate: as published 100 (0.78 + 1) / 2" 2 score=100 threshold=0.8 \
    score_as_published=89 raw_as_published=0.78
expect_values "reward_low_FN_rate: a miss costs 2" 3 score=100 null=-2 perfect=1 \
    score_as_published=96.33333333333333
expect_values "summary as published" 4 summary=true files=2 windows=1 windows_hit=1 alerts=2 \
    false_alerts=1 alerts_per_window_median=1 alerts_per_window_max=1 precision=0.5 recall=1 \
    delay_rows_median=0 delay_fraction_median=0
if [ "$(wc -l <"$tmp/out")" -eq 4 ] && grep -q '^{"profile":"standard",' "$tmp/out" &&
    sed -n 2p "$tmp/out" | grep -q '^{"profile":"reward_low_FP_rate",' &&
    sed -n 3p "$tmp/out" | grep -q '^{"profile":"reward_low_FN_rate",'; then
    ok "three profile lines and a summary"
else
    not_ok "three profile lines and a summary" "$(head -c 400 "$tmp/out" | tr '\n' '|')"
fi
if grep -q '^tsmine: score: 1 alert of stream "zzz" matches no file' "$tmp/err"; then
    ok "a stream without a file is reported, not an error"
else
    not_ok "a stream without a file is reported, not an error" "$(errtext)"
fi
cp "$tmp/out" "$tmp/default.out"

# The same alerts from standard input, with or without "-".
"$TSMINE" score --windows "$W" --data "$tmp/data" <"$A" >"$tmp/stdin.out" 2>/dev/null
"$TSMINE" score --windows "$W" --data "$tmp/data" - <"$A" >"$tmp/dash.out" 2>/dev/null
if cmp -s "$tmp/default.out" "$tmp/stdin.out" && cmp -s "$tmp/default.out" "$tmp/dash.out"; then
    ok "standard input (no operand, or -) reads the same"
else
    not_ok "standard input (no operand, or -) reads the same"
fi

# --at start: alert 1 lies on row 7 (a false alert before the window), alert 2 on row 5
# of y: nothing hit; NAB's best is to detect nothing (1.1, score 0); as published
# -1 - 0.22 = -1.22, 100 (-1.22 + 1) / 2 = -11.
run --windows "$W" --data "$tmp/data" --at start "$A"
expect_values "--at start: the subsequence's first row" 1 score=0 raw=-1 threshold=1.1 \
    raw_as_published=-1.22 score_as_published=-11
expect_values "--at start: summary" 4 windows_hit=0 alerts=2 false_alerts=2 precision=0 recall=0 \
    delay_rows_median=null alerts_per_window_max=0

# --kinds MOTIF: only alert 3, row 12 of the window 10..13: -(13 - 12 + 1) / 4 = -0.5,
# S(-0.5) / S(-1) = tanh(1.25) / tanh(2.5) = 0.85979257; 100 (0.8598 + 1) / 2 = 92.99;
# delay 2 rows, 2 / 4 = 0.5 of the window.
run --windows "$W" --data "$tmp/data" --kinds MOTIF "$A"
expect_values "--kinds MOTIF: a hit half-way" 1 raw=0.8597925669097837 \
    score=92.98962834548919 threshold=1
expect_values "--kinds MOTIF: delays" 4 alerts=1 windows_hit=1 delay_rows_median=2 \
    delay_fraction_median=0.5

# --probation 0.6: 12 rows; the window 10..13 straddles their end and row 12 still
# hits it. 0.7: 14 rows; the window ends inside: nothing is scored (score null).
run --windows "$W" --data "$tmp/data" --kinds MOTIF,ANOMALY --probation 0.6 "$A"
expect_values "--probation 0.6: only rows past it hit" 1 raw=0.8597925669097837
run --windows "$W" --data "$tmp/data" --probation 0.7 "$A"
expect_values "--probation 0.7: a window inside it is not scored" 1 score=null raw=0
expect_values "--probation 0.7: summary" 4 windows=0 recall=null

# --per-file: one more line per file, after the summary.
run --windows "$W" --data "$tmp/data" --per-file "$A"
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/out")" -eq 6 ] &&
    sed -n 5p "$tmp/out" | grep -q '^{"file":"a/x.csv","rows":20,"probation":3,"windows":1,' &&
    sed -n 6p "$tmp/out" | grep -q '"raw":{"standard":0,' &&
    sed -n 6p "$tmp/out" | grep -q '"raw_as_published":{"standard":-0.11,'; then
    ok "--per-file: a line per file with its raw scores"
else
    not_ok "--per-file: a line per file with its raw scores" "$(tr '\n' '|' <"$tmp/out")"
fi

# Stream names: the last path component without extension; among files of one base
# name, the one whose path the stream id ends with; else ambiguous.
cat >"$tmp/w2.json" <<'EOF'
{"a/x.csv": [["2020-01-01 00:50:00", "2020-01-01 01:05:00"]], "c/x.csv": []}
EOF
printf '{"stream_id":"site/c/x","kind":"ANOMALY","start_seq":10,"length":1}\n' >"$tmp/c.jsonl"
run --windows "$tmp/w2.json" --data "$tmp/data" "$tmp/c.jsonl"
expect_values "a path picks one of two files of one base name" 4 windows_hit=0 false_alerts=1
printf '{"stream_id":"x","kind":"ANOMALY","start_seq":10,"length":1}\n' >"$tmp/amb.jsonl"
expect_err "ambiguous stream -> 65 FILE:LINE" 65 "$tmp/amb.jsonl:1: stream \"x\" matches several" \
    --windows "$tmp/w2.json" --data "$tmp/data" "$tmp/amb.jsonl"

# A file name with a dot before its extension, as TSB-UAD's "MGAB/1.test.csv": `tsmine
# detect` names its stream "1.test", the file's name without extension as it is; a
# stream id with the extension still finds it.
mkdir -p "$tmp/data/d"
cp "$tmp/data/a/x.csv" "$tmp/data/d/1.test.csv"
printf '{"d/1.test.csv": [["2020-01-01 00:50:00", "2020-01-01 01:05:00"]]}\n' >"$tmp/w3.json"
{
    printf '{"stream_id":"1.test","kind":"ANOMALY","start_seq":10,"length":1}\n'
    printf '{"stream_id":"mgab/1.test.csv","kind":"ANOMALY","start_seq":15,"length":1}\n'
} >"$tmp/d.jsonl"
run --windows "$tmp/w3.json" --data "$tmp/data" "$tmp/d.jsonl"
expect_values "a dotted file name: its stream with or without the extension" 4 windows_hit=1 \
    alerts=2 false_alerts=1

# ---- AUC-PR of score lines (--scores) ---------------------------------------------
# Score lines of x, m = 4: start 7 (0.9), 8 (0.9), 14 (0.5), 15 (null: no score), 16
# (0.2); "raw" = 1 - score. Labelled rows: the window 10..13, 4 of 20; y has none
# (unlabelled, left out of the means). Rows without a score rank lowest, tied.
# end (start + 3): rows 10 .9, 11 .9, 17 .5, 19 .2, 16 rows none.
#   t .9: TP 2 FP 0 (R .5, P 1); .5: (.5, 2/3); .2: (.5, .5); none: TP 4 FP 16 (1, .2).
#   AP = .5 + .5 * .2 = .6; trapezoid .5 * (1 + 1) / 2 + .5 * (.5 + .2) / 2 = .675.
# centre (start + 2): rows 9 .9, 10 .9, 16 .5, 18 .2.
#   t .9: TP 1 FP 1 (.25, .5); .5: (.25, 1/3); .2: (.25, .25); none: (1, .2).
#   AP = .25 * .5 + .75 * .2 = .275; trapezoid .25 * 1.5 / 2 + .75 * .45 / 2 = .35625.
S=$tmp/scores.jsonl
cat >"$S" <<'EOF'
{"stream_id":"x","start_seq":7,"raw":0.1,"neighbor_seq":0,"score":0.9,"m":4}
{"stream_id":"x","start_seq":8,"raw":0.1,"neighbor_seq":0,"score":0.9,"m":4}
{"stream_id":"x","start_seq":14,"raw":0.5,"neighbor_seq":0,"score":0.5,"m":4}

{"stream_id":"x","start_seq":15,"raw":null,"neighbor_seq":0,"score":null,"m":4}
{"stream_id":"x","start_seq":16,"raw":0.8,"neighbor_seq":0,"score":0.2,"m":4}
EOF
run --windows "$W" --data "$tmp/data" --scores "$S"
expect_values "AUC-PR, end: average precision and trapezoid by hand" 1 series=1 \
    series_unscored=0 series_unlabelled=1 rows=40 labelled_rows=4 average_precision_mean=0.6 \
    trapezoid_mean=0.675
expect_values "AUC-PR, centre: the same scores (m - 1) / 2 rows earlier" 2 \
    average_precision_mean=0.275 trapezoid_mean=0.35625
if [ "$(wc -l <"$tmp/out")" -eq 2 ] &&
    grep -q '^{"auc_pr":"windows","at":"end","field":"score",' "$tmp/out" &&
    sed -n 2p "$tmp/out" | grep -q '^{"auc_pr":"windows","at":"centre",' &&
    [ ! -s "$tmp/err" ]; then
    ok "--scores alone: two AUC-PR lines, no NAB lines, nothing on stderr"
else
    not_ok "--scores alone: two AUC-PR lines, no NAB lines, nothing on stderr" \
        "$(tr '\n' '|' <"$tmp/out") $(errtext)"
fi
run --windows "$W" --data "$tmp/data" --scores "$S" "$A"
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/out")" -eq 6 ] &&
    head -4 "$tmp/out" | cmp -s - "$tmp/default.out"; then
    ok "alerts and scores: the NAB lines as before, then the AUC-PR lines"
else
    not_ok "alerts and scores: the NAB lines as before, then the AUC-PR lines" "$(errtext)"
fi

# --score-field raw: end rows 10 .1, 11 .1, 17 .5, 19 .8: t .8 (0, 0); .5 (0, 0);
# .1: TP 2 FP 2 (.5, .5); none (1, .2): AP .5 * .5 + .5 * .2 = .35, trapezoid
# .5 * .5 / 2 + .5 * .7 / 2 = .3.
run --windows "$W" --data "$tmp/data" --scores "$S" --score-field raw
expect_values "--score-field raw ranks another member" 1 average_precision_mean=0.35 \
    trapezoid_mean=0.3

# --labels: row 11 (00:55) of x. end: row 11 is .9 with row 10: (1, .5): AP .5,
# trapezoid .75. centre: row 11 has no score: (0, 0) until the unscored rows,
# TP 1 FP 19: (1, .05): AP .05, trapezoid .025.
printf '{"a/x.csv": ["2020-01-01 00:55:00"], "elsewhere.csv": ["nonsense"]}\n' >"$tmp/labels.json"
run --windows "$W" --data "$tmp/data" --scores "$S" --labels "$tmp/labels.json"
expect_values "--labels, end: one labelled point" 3 labelled_rows=1 average_precision_mean=0.5 \
    trapezoid_mean=0.75
expect_values "--labels, centre" 4 average_precision_mean=0.05 trapezoid_mean=0.025
if sed -n 3p "$tmp/out" | grep -q '^{"auc_pr":"points","at":"end",'; then
    ok "--labels: two more lines, points after windows"
else
    not_ok "--labels: two more lines, points after windows" "$(tr '\n' '|' <"$tmp/out")"
fi

# The same lines without "m", and --subsequence 4; a stream whose start_seq goes back
# starts over (the line of start 9 before it is dropped); "-" reads standard input.
grep -v '^$' "$S" | sed 's/,"m":4//' >"$tmp/nom.jsonl"
{
    printf '{"stream_id":"x","start_seq":9,"score":1}\n'
    cat "$tmp/nom.jsonl"
} >"$tmp/restart.jsonl"
"$TSMINE" score --windows "$W" --data "$tmp/data" --subsequence 4 --scores - \
    <"$tmp/restart.jsonl" >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_values "--subsequence, a restart, standard input" 1 average_precision_mean=0.6 \
    trapezoid_mean=0.675
if grep -q '^tsmine: score: the score lines of 1 file started over' "$tmp/err"; then
    ok "a restart is reported"
else
    not_ok "a restart is reported" "$(errtext)"
fi

# --per-file with scores only: each file's rows, lines and areas; null without labels.
run --windows "$W" --data "$tmp/data" --scores "$S" --per-file
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/out")" -eq 4 ] &&
    sed -n 3p "$tmp/out" | grep -qF '{"file":"a/x.csv","rows":20,"score_lines":5,"restarts":0,"auc_pr":{"windows":{"labelled_rows":4,"end":{"average_precision":0.6' &&
    sed -n 4p "$tmp/out" | grep -qF '"score_lines":0,"restarts":0,"auc_pr":{"windows":{"labelled_rows":0,"end":{"average_precision":null,"trapezoid":null}'; then
    ok "--per-file with --scores: areas per file"
else
    not_ok "--per-file with --scores: areas per file" "$(tr '\n' '|' <"$tmp/out")"
fi

# Lines of no file, and lines past the end of theirs, are reported, not errors; a file
# with labelled rows and no score line ranks all its rows tied (AP = its share).
printf '{"stream_id":"x","start_seq":17,"score":1,"m":4}\n{"stream_id":"q","start_seq":1,"score":1,"m":4}\n' \
    >"$tmp/edge.jsonl"
run --windows "$W" --data "$tmp/data" --scores "$tmp/edge.jsonl"
if [ "$rc" -eq 0 ] && grep -q '^tsmine: score: 1 score line of stream "q" matches no file' "$tmp/err" &&
    grep -q '^tsmine: score: 1 score line ends past the last row' "$tmp/err"; then
    ok "score lines of no file, and past the end, are reported"
else
    not_ok "score lines of no file, and past the end, are reported" "$(errtext)"
fi
printf '{"stream_id":"y","start_seq":1,"score":1,"m":4}\n' >"$tmp/onlyy.jsonl"
run --windows "$W" --data "$tmp/data" --scores "$tmp/onlyy.jsonl"
expect_values "a labelled file without a score line: all tied, AP = 4/20" 1 series=1 \
    series_unscored=1 average_precision_mean=0.2 trapezoid_mean=0.6
if grep -q '^tsmine: score: 1 file with labelled rows has no score line: every row of it ranks' \
    "$tmp/err"; then
    ok "a file without a score line is reported"
else
    not_ok "a file without a score line is reported" "$(errtext)"
fi

# ---- errors -----------------------------------------------------------------------
run --help
if [ "$rc" -eq 0 ] && grep -q '^Usage: tsmine score ' "$tmp/out" && grep -q -- '--kinds' "$tmp/out"
then ok "--help"; else not_ok "--help" "exit $rc"; fi
if "$TSMINE" help score | grep -q '^Usage: tsmine score ' &&
    "$TSMINE" --help | grep -q '^  score '; then
    ok "tsmine help score, and tsmine --help lists it"
else
    not_ok "tsmine help score, and tsmine --help lists it"
fi

expect_err "missing --windows -> 64" 64 "missing --windows" --data "$tmp/data" "$A"
expect_err "missing --data -> 64" 64 "missing --data" --windows "$W" "$A"
expect_err "unknown kind -> 64" 64 "--kinds: unknown kind 'BOGUS'" \
    --windows "$W" --data "$tmp/data" --kinds DISCORD,BOGUS "$A"
expect_err "--at bogus -> 64" 64 "--at: unknown place" --windows "$W" --data "$tmp/data" --at x "$A"
expect_err "--probation 2 -> 64" 64 "--probation: invalid fraction" \
    --windows "$W" --data "$tmp/data" --probation 2 "$A"
expect_err "unknown option -> 64" 64 "unknown or misused option '--bogus'" \
    --windows "$W" --data "$tmp/data" --bogus "$A"

expect_err "missing windows file -> 66" 66 "$tmp/none.json: " --windows "$tmp/none.json" \
    --data "$tmp/data" "$A"
expect_err "missing alerts file -> 66" 66 "$tmp/none.jsonl: " --windows "$W" --data "$tmp/data" \
    "$tmp/none.jsonl"
printf '{"a/x.csv": [], "a/missing.csv": []}\n' >"$tmp/w-missing.json"
expect_err "missing data file -> 66 naming it" 66 "$tmp/data/a/missing.csv: " \
    --windows "$tmp/w-missing.json" --data "$tmp/data" "$A"

printf '{\n "a/x.csv": [\n  ["2020-01-01 00:50:00" "2020-01-01 01:05:00"]\n ]\n}\n' >"$tmp/w-syntax.json"
expect_err "malformed windows JSON -> 65 FILE:LINE" 65 "$tmp/w-syntax.json:3: expected ','" \
    --windows "$tmp/w-syntax.json" --data "$tmp/data" "$A"
printf '[1, 2]\n' >"$tmp/w-array.json"
expect_err "windows file not an object -> 65" 65 "$tmp/w-array.json:1: the windows file must" \
    --windows "$tmp/w-array.json" --data "$tmp/data" "$A"
printf '{"a/x.csv": [\n ["2020-01-01 00:51:00", "2020-01-01 01:05:00"]]}\n' >"$tmp/w-bound.json"
expect_err "window bound matching no row -> 65 naming file and timestamp" 65 \
    "$tmp/w-bound.json:2: window bound '2020-01-01 00:51:00' of \"a/x.csv\" matches no row" \
    --windows "$tmp/w-bound.json" --data "$tmp/data" "$A"
printf '{"a/x.csv": [\n ["2020-01-01 01:05:00", "2020-01-01 00:50:00"]]}\n' >"$tmp/w-rev.json"
expect_err "window ending before it starts -> 65" 65 "$tmp/w-rev.json:2: .* ends before it starts" \
    --windows "$tmp/w-rev.json" --data "$tmp/data" "$A"

expect_err "score line without m -> 65 FILE:LINE" 65 \
    "$tmp/nom.jsonl:1: the score line does not name its subsequence length .*--subsequence" \
    --windows "$W" --data "$tmp/data" --scores "$tmp/nom.jsonl"
expect_err "--score-field naming nothing -> 65" 65 "$S:1: \"bogus\" must be a number or null" \
    --windows "$W" --data "$tmp/data" --scores "$S" --score-field bogus
printf '{"stream_id":"x","start_seq":1,"score":1,"m":0}\n' >"$tmp/m0.jsonl"
expect_err "m = 0 -> 65" 65 "$tmp/m0.jsonl:1: \"m\" must be >= 1" \
    --windows "$W" --data "$tmp/data" --scores "$tmp/m0.jsonl"
expect_err "missing scores file -> 66" 66 "$tmp/none.jsonl: " --windows "$W" --data "$tmp/data" \
    --scores "$tmp/none.jsonl"
expect_err "--labels without --scores -> 64" 64 "--labels needs --scores" \
    --windows "$W" --data "$tmp/data" --labels "$tmp/labels.json" "$A"
expect_err "standard input twice -> 64" 64 "standard input \(-\) can be read only once" \
    --windows "$W" --data "$tmp/data" --scores - -
expect_err "--subsequence 0 -> 64" 64 "--subsequence: invalid value '0'" \
    --windows "$W" --data "$tmp/data" --scores "$S" --subsequence 0
printf '{"a/x.csv": [\n "2020-01-01 00:56:00"]}\n' >"$tmp/l-bad.json"
expect_err "point label matching no row -> 65" 65 \
    "$tmp/l-bad.json:2: label '2020-01-01 00:56:00' of \"a/x.csv\" matches no row" \
    --windows "$W" --data "$tmp/data" --scores "$S" --labels "$tmp/l-bad.json"

printf '{"stream_id":"x","kind":"ANOMALY","start_seq":1,"length":1}\n{"stream_id":"x",\n' \
    >"$tmp/bad.jsonl"
expect_err "malformed alert line -> 65 FILE:LINE" 65 "$tmp/bad.jsonl:2: " \
    --windows "$W" --data "$tmp/data" "$tmp/bad.jsonl"
printf '\n{"stream_id":"x","kind":"ANOMALY","length":1}\n' >"$tmp/noseq.jsonl"
expect_err "alert without start_seq -> 65 FILE:LINE" 65 "$tmp/noseq.jsonl:2: \"start_seq\" must be" \
    --windows "$W" --data "$tmp/data" "$tmp/noseq.jsonl"
printf '{"stream_id":"x","kind":"ANOMALY","start_seq":1,"length":1,"score":1.5}\n' \
    >"$tmp/range.jsonl"
expect_err "score outside [0, 1] -> 65" 65 "$tmp/range.jsonl:1: \"score\" must be" \
    --windows "$W" --data "$tmp/data" "$tmp/range.jsonl"
mkdir -p "$tmp/bad/a"
printf 'timestamp,value\n2020-01-01 00:00:00,1\nyesterday,2\n' >"$tmp/bad/a/x.csv"
printf '{"a/x.csv": []}\n' >"$tmp/w-x.json"
expect_err "data row without a timestamp -> 65 FILE:LINE" 65 \
    "$tmp/bad/a/x.csv:3: 'yesterday' is not a timestamp" \
    --windows "$tmp/w-x.json" --data "$tmp/bad" "$A"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
