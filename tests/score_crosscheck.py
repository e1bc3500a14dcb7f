#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""score_crosscheck.py - `tsmine score` against an independent Python scorer.

Writes a synthetic alert stream for a NAB-style corpus (windows file + data folder):
random alerts of every kind, scores with ties, null and absent scores, alerts with and
without detected_seq, alerts on the rows around every window bound, inside the
probationary period, past the end of a file, and of a stream with no file. Then scores
it here, straight from the definition (NAB's sweeper: every candidate threshold,
1.1 and each distinct score of a scored row, scored from scratch, the best one winning
with ties to the higher threshold), runs `tsmine score` on the same input under several
option sets, and compares every figure (relative tolerance 1e-9).

Then the same for AUC-PR (--scores, --labels): synthetic score lines with few distinct
scores (many ties), nulls, m named as "m" or "length" or not at all (--subsequence), a
stream that starts over, lines past the end of their file and of a stream without one,
and random point labels; each file's average precision and trapezoid area computed
here from scratch at every distinct score, and, where scikit-learn is installed (a
test-only tool: Debian python3-sklearn), by its average_precision_score and
auc(precision_recall_curve), on both placements (end, centre) and both labellings.

    score_crosscheck.py --tsmine TSMINE --windows combined_windows.json --data DIR
    score_crosscheck.py --tsmine TSMINE --bundled tests/data    # the 3 bundled NAB files

Standard library only (scikit-learn optional). Prints `ok - NAME` / `not ok - NAME` per check; exits 1 when
any check failed.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

PROFILES = [("standard", 1.0, 0.11, 1.0),
            ("reward_low_FP_rate", 1.0, 0.22, 1.0),
            ("reward_low_FN_rate", 1.0, 0.11, 2.0)]
KINDS = ["ANOMALY", "ANOMALY_END", "DISCORD", "LEFT_DISCORD", "MOTIF", "GAP"]

# The labelled windows of the three NAB files in tests/data (NAB's
# combined_windows.json, MIT licence: tests/data/NAB-LICENSE.txt).
BUNDLED = {
    "artificialWithAnomaly/art_daily_jumpsup.csv": [
        ["2014-04-10 16:15:00.000000", "2014-04-12 01:45:00.000000"]],
    "realKnownCause/machine_temperature_system_failure.csv": [
        ["2013-12-10 06:25:00.000000", "2013-12-12 05:35:00.000000"],
        ["2013-12-15 17:50:00.000000", "2013-12-17 17:00:00.000000"],
        ["2014-01-27 14:20:00.000000", "2014-01-29 13:30:00.000000"],
        ["2014-02-07 14:55:00.000000", "2014-02-09 14:05:00.000000"]],
    "realKnownCause/nyc_taxi.csv": [
        ["2014-10-30 15:30:00.000000", "2014-11-03 22:30:00.000000"],
        ["2014-11-25 12:00:00.000000", "2014-11-29 19:00:00.000000"],
        ["2014-12-23 11:30:00.000000", "2014-12-27 18:30:00.000000"],
        ["2014-12-29 21:30:00.000000", "2015-01-03 04:30:00.000000"],
        ["2015-01-24 20:30:00.000000", "2015-01-29 03:30:00.000000"]],
}


def timestamp(text):
    """'YYYY-MM-DD HH:MM:SS[.ffffff]' -> 'YYYY-MM-DD HH:MM:SS', or None."""
    t = text.strip().strip('"')
    if len(t) < 19 or t[4] != "-" or t[7] != "-" or t[13] != ":" or t[16] != ":":
        return None
    return t[:10] + " " + t[11:19]


def read_rows(path):
    """The normalised timestamps of a CSV file's data rows."""
    with open(path) as f:
        lines = [ln.rstrip("\r\n") for ln in f]
    while lines and not lines[-1].strip():
        lines.pop()
    rows = []
    for k, ln in enumerate(lines):
        if not ln.strip():
            if rows:
                rows.append("")
            continue
        ts = timestamp(ln.split(",")[0])
        if ts is None and k == 0:
            continue
        rows.append(ts)
    return rows


class File:
    def __init__(self, key, rows, windows, probation_fraction):
        self.key = key
        self.n = len(rows)
        first = {}
        for i, ts in enumerate(rows):
            first.setdefault(ts, i)
        self.windows = [(first[timestamp(a)], first[timestamp(b)]) for a, b in windows]
        self.probation = 0
        limit = min(math.floor(probation_fraction * self.n), probation_fraction * 5000)
        while self.probation < self.n and self.probation < limit:
            self.probation += 1
        self.score = [0.0] * self.n
        self.alerted = [False] * self.n


def sigmoid_scaled(y):
    if y >= 3.0:
        return -1.0
    return 2.0 / (1.0 + math.exp(5.0 * y)) - 1.0


def file_score(f, rows, profile):
    """Score of file f when exactly the rows in `rows` (a set) are detections."""
    _, tp, fp, fn = profile
    total = 0.0
    counts = {"windows": 0, "hit": 0, "det": 0, "inwin": 0, "false": 0}
    det = sorted(i for i in rows if i >= f.probation)
    counts["det"] = len(det)
    for a, b in f.windows:
        if b < f.probation:
            continue
        counts["windows"] += 1
        inside = [i for i in det if a <= i <= b]
        counts["inwin"] += len(inside)
        if not inside:
            total -= fn
            continue
        counts["hit"] += 1
        i = inside[0]
        w = b - a + 1
        total += tp * sigmoid_scaled(-(b - i + 1) / w) / sigmoid_scaled(-1.0)
    for i in det:
        if any(a <= i <= b for a, b in f.windows):
            continue
        counts["false"] += 1
        before = [(a, b) for a, b in f.windows if b < i]
        if not before:
            total -= fp
            continue
        a, b = before[-1]
        total += fp * (-1.0 if b == a else sigmoid_scaled((i - b) / (b - a)))
    return total, counts


def corpus_score(files, detections, profile):
    total = 0.0
    windows = 0
    for f in files:
        s, c = file_score(f, detections[f.key], profile)
        total += s
        windows += c["windows"]
    return total, windows


def best_threshold(files, profile):
    """NAB's choice: the best of 1.1 and every distinct score of a scored row."""
    by_row = sorted(((f.score[i], f.key, i) for f in files for i in range(f.probation, f.n)),
                    reverse=True)
    candidates = [1.1] + sorted({s for s, _, _ in by_row}, reverse=True)
    best, best_t = None, None
    chosen = {f.key: set() for f in files}
    k = 0
    for t in candidates:
        while k < len(by_row) and by_row[k][0] >= t:
            chosen[by_row[k][1]].add(by_row[k][2])
            k += 1
        s, _ = corpus_score(files, chosen, profile)
        if best is None or s > best:
            best, best_t = s, t
    return best_t, best


def base(name):
    b = name.rsplit("/", 1)[-1]
    return b.rsplit(".", 1)[0] if "." in b[1:] else b


def place(files, alerts, kinds, at):
    by_base = {base(f.key): f for f in files}
    for a in alerts:
        if a["kind"] not in kinds:
            continue
        f = by_base.get(base(a["stream_id"]))
        if f is None:
            continue
        if at == "start":
            row = a["start_seq"]
        elif a.get("detected_seq") is not None:
            row = a["detected_seq"]
        else:
            row = a["start_seq"] + max(a["length"], 1) - 1
        if row >= f.n:
            continue
        s = a.get("score")
        s = 1.0 if s is None else s
        f.alerted[row] = True
        f.score[row] = max(f.score[row], s)


def median(x):
    x = sorted(x)
    if not x:
        return None
    n = len(x)
    return x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2


def expected(windows, data, alerts, kinds, at, probation):
    files = []
    for key, wins in windows.items():
        files.append(File(key, read_rows(os.path.join(data, key)), wins, probation))
    place(files, alerts, kinds, at)
    out = {}
    published = {f.key: {i for i in range(f.n) if f.alerted[i]} for f in files}
    for prof in PROFILES:
        t, raw = best_threshold(files, prof)
        chosen = {f.key: {i for i in range(f.n) if f.score[i] >= t} for f in files}
        raw_t, windows_n = corpus_score(files, chosen, prof)
        raw0, _ = corpus_score(files, published, prof)
        null, perfect = -prof[3] * windows_n, prof[1] * windows_n
        norm = (lambda r: 100 * (r - null) / (perfect - null)) if windows_n else (lambda r: None)
        out[prof[0]] = {"threshold": t, "raw": raw_t, "sweep_raw": raw, "null": null,
                        "perfect": perfect, "score": norm(raw_t),
                        "raw_as_published": raw0, "score_as_published": norm(raw0)}
    per, delay, frac = [], [], []
    tot = {"windows": 0, "hit": 0, "det": 0, "inwin": 0, "false": 0}
    for f in files:
        _, c = file_score(f, published[f.key], PROFILES[0])
        for k in tot:
            tot[k] += c[k]
        det = sorted(i for i in published[f.key] if i >= f.probation)
        for a, b in f.windows:
            inside = [i for i in det if a <= i <= b]
            if b >= f.probation and inside:
                per.append(len(inside))
                delay.append(inside[0] - a)
                frac.append((inside[0] - a) / (b - a + 1))
    out["summary"] = {
        "files": len(files), "windows": tot["windows"], "windows_hit": tot["hit"],
        "alerts": tot["det"], "false_alerts": tot["false"],
        "alerts_per_window_median": median(per), "alerts_per_window_max": max(per, default=0),
        "precision": tot["inwin"] / tot["det"] if tot["det"] else None,
        "recall": tot["hit"] / tot["windows"] if tot["windows"] else None,
        "delay_rows_median": median(delay), "delay_fraction_median": median(frac)}
    return out, files


def synthetic_alerts(windows, data, seed):
    rng = random.Random(seed)
    alerts = []
    scores = [round(rng.random(), 2) for _ in range(40)]  # few values: many ties
    for key, wins in windows.items():
        rows = read_rows(os.path.join(data, key))
        n = len(rows)
        first = {ts: i for i, ts in reversed(list(enumerate(rows)))}
        stream = rng.choice(["nab/", "", "site/"]) + base(key) + rng.choice(["", ".csv"])
        targets = [rng.randrange(n) for _ in range(max(8, n // 150))]
        for a, b in wins:
            a, b = first[timestamp(a)], first[timestamp(b)]
            targets += [a - 1, a, a + 1, (a + b) // 2, b - 1, b, b + 1, b + 2, b + (b - a)]
        targets += [0, 5, n - 1, n, n + 7]  # probation, the last row, past the end
        for row in targets:
            if row < 0:
                continue
            length = rng.choice([1, 16, 64])
            alert = {"stream_id": stream, "kind": rng.choice(KINDS), "length": length}
            r = rng.random()
            if r < 0.1:
                pass  # no score: 1.0
            elif r < 0.2:
                alert["score"] = None
            else:
                alert["score"] = rng.choice(scores)
            if rng.random() < 0.5:
                alert["detected_seq"] = row
                alert["start_seq"] = max(0, row - rng.randrange(length))
            else:
                alert["start_seq"] = max(0, row - length + 1)
            alerts.append(alert)
            if rng.random() < 0.1:  # a second alert on the same row
                alerts.append(dict(alert, kind="DISCORD", score=rng.choice(scores)))
    alerts.append({"stream_id": "nowhere/none", "kind": "DISCORD", "start_seq": 3, "length": 2})
    rng.shuffle(alerts)
    return alerts


def pr_areas(scores, labels):
    """(average precision, trapezoid) of scores (None: no score, ranked lowest) against
    labels, from scratch at every distinct score; (None, None) without a positive."""
    positives = sum(labels)
    if positives == 0:
        return None, None
    key = [-math.inf if x is None else x for x in scores]
    ap = trap = 0.0
    r_prev, p_prev = 0.0, 1.0
    for t in sorted(set(key), reverse=True):
        tp = sum(1 for k, y in zip(key, labels) if k >= t and y)
        fp = sum(1 for k, y in zip(key, labels) if k >= t and not y)
        r, p = tp / positives, tp / (tp + fp)
        ap += (r - r_prev) * p
        trap += (r - r_prev) * (p + p_prev) / 2
        r_prev, p_prev = r, p
    return ap, trap


def sklearn_areas(scores, labels):
    """The same areas by scikit-learn, or None where it is not installed (NaN scores
    become one value below every score: the same ranking)."""
    try:
        from sklearn import metrics
    except ImportError:
        return None
    if sum(labels) == 0:
        return None, None
    finite = [x for x in scores if x is not None]
    low = (min(finite) if finite else 0.0) - 1.0
    y_score = [low if x is None else x for x in scores]
    precision, recall, _ = metrics.precision_recall_curve(labels, y_score)
    return (float(metrics.average_precision_score(labels, y_score)),
            float(metrics.auc(recall, precision)))


def synthetic_scores(windows, data, seed):
    """Score lines for every file but the last, point labels for every file: returns
    (lines, labels, m of each file, the --subsequence the m-less lines need)."""
    rng = random.Random(seed)
    values = [round(rng.random(), 2) for _ in range(12)]
    keys = sorted(windows)
    lines, labels, m_of = [], {}, {}
    subsequence = 8
    for n_key, key in enumerate(keys):
        rows = read_rows(os.path.join(data, key))
        n = len(rows)
        labels[key] = [rows[rng.randrange(n)] for _ in range(rng.randrange(1, 4))]
        if n_key == len(keys) - 1:
            continue  # a file without a score line: every row tied
        m = rng.choice([subsequence, 16, 33, 64])
        m_of[key] = m
        stream = base(key)
        naming = rng.choice(["m", "length", None]) if m == subsequence else "m"
        starts = list(range(0, 300)) + list(range(200, n - m + 1 + 3))  # over; past the end
        for start in starts:
            if rng.random() < 0.2:
                continue  # gaps
            line = {"stream_id": stream, "start_seq": start, "raw": rng.random(),
                    "score": None if rng.random() < 0.1 else rng.choice(values)}
            if naming:
                line[naming] = m
            lines.append(line)
    lines.append({"stream_id": "nowhere", "start_seq": 5, "score": 1, "m": 4})
    return lines, labels, m_of, subsequence


def auc_expected(windows, data, lines, labels, subsequence):
    """Per file: {(labelling, placement): (ap, trapezoid)}; and the mean lines."""
    files = {}
    for key, wins in windows.items():
        rows = read_rows(os.path.join(data, key))
        first = {}
        for i, ts in enumerate(rows):
            first.setdefault(ts, i)
        n = len(rows)
        in_window = [0] * n
        for a, b in wins:
            for i in range(first[timestamp(a)], first[timestamp(b)] + 1):
                in_window[i] = 1
        points = [0] * n
        for ts in labels.get(key, []):
            points[first[timestamp(ts)]] = 1
        files[key] = {"n": n, "windows": in_window, "points": points,
                      "end": [None] * n, "centre": [None] * n, "last": None}
    by_base = {base(k): k for k in files}
    for line in lines:
        key = by_base.get(line["stream_id"])
        if key is None:
            continue
        f = files[key]
        if f["last"] is not None and line["start_seq"] <= f["last"]:
            f["end"], f["centre"] = [None] * f["n"], [None] * f["n"]
        f["last"] = line["start_seq"]
        m = line.get("m", line.get("length", subsequence))
        x = line.get("score")
        for at, row in (("end", line["start_seq"] + m - 1), ("centre", line["start_seq"] + m // 2)):
            if row < f["n"] and x is not None and (f[at][row] is None or x > f[at][row]):
                f[at][row] = x
    per_file, means = {}, {}
    for by in ("windows", "points"):
        for at in ("end", "centre"):
            aps, traps = [], []
            for key, f in files.items():
                ap, trap = pr_areas(f[at], f[by])
                per_file[key, by, at] = (ap, trap)
                sk = sklearn_areas(f[at], f[by])
                if sk is not None:
                    per_file[key, by, at, "sklearn"] = sk
                if ap is not None:
                    aps.append(ap)
                    traps.append(trap)
            means[by, at] = (sum(aps) / len(aps), sum(traps) / len(traps))
    return per_file, means


def check_auc(args, tmp, windows_path, windows, data):
    """Runs tsmine score --scores --labels --per-file and compares every area."""
    lines, labels, _, subsequence = synthetic_scores(windows, data, args.seed)
    scores_path = os.path.join(tmp, "scores.jsonl")
    labels_path = os.path.join(tmp, "labels.json")
    with open(scores_path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    with open(labels_path, "w") as f:
        json.dump(labels, f)
    per_file, means = auc_expected(windows, data, lines, labels, subsequence)
    proc = subprocess.run([args.tsmine, "score", "--windows", windows_path, "--data", data,
                           "--scores", scores_path, "--labels", labels_path,
                           "--subsequence", str(subsequence), "--per-file"],
                          capture_output=True, text=True)
    name = "AUC-PR: --scores --labels --per-file"
    if proc.returncode != 0:
        print(f"not ok - {name}: exit {proc.returncode}\n#   {proc.stderr.strip()}")
        return 1
    bad, sk_checked = [], 0
    for ln in map(json.loads, proc.stdout.splitlines()):
        if "auc_pr" in ln and "file" not in ln:
            want = means[ln["auc_pr"], ln["at"]]
            got = (ln["average_precision_mean"], ln["trapezoid_mean"])
            if not (close(got[0], want[0]) and close(got[1], want[1])):
                bad.append(f"mean {ln['auc_pr']} {ln['at']}: tsmine {got}, python {want}")
        elif "file" in ln:
            for by, per_at in ln["auc_pr"].items():
                for at in ("end", "centre"):
                    got = (per_at[at]["average_precision"], per_at[at]["trapezoid"])
                    want = per_file[ln["file"], by, at]
                    if not (close(got[0], want[0]) and close(got[1], want[1])):
                        bad.append(f"{ln['file']} {by} {at}: tsmine {got}, python {want}")
                    sk = per_file.get((ln["file"], by, at, "sklearn"))
                    if sk is not None:
                        sk_checked += 1
                        if not (close(got[0], sk[0]) and close(got[1], sk[1])):
                            bad.append(f"{ln['file']} {by} {at}: tsmine {got}, sklearn {sk}")
    if len(means) != 4 or not proc.stdout:
        bad.append("missing output lines")
    if bad:
        print(f"not ok - {name}")
        for b in bad:
            print(f"#   {b}")
        return 1
    w = means["windows", "end"]
    print(f"ok - {name}: windows/end AP {w[0]:.6f}, trapezoid {w[1]:.6f} "
          f"({len(lines)} lines; scikit-learn " +
          (f"agrees on {sk_checked} areas)" if sk_checked else "not installed)"))
    return 0


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsmine", required=True)
    ap.add_argument("--windows")
    ap.add_argument("--data")
    ap.add_argument("--bundled", help="tests/data: use its three NAB files")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="tsmine-score-xcheck.")
    if args.bundled:
        data = os.path.join(tmp.name, "data")
        for key in BUNDLED:
            os.makedirs(os.path.join(data, os.path.dirname(key)), exist_ok=True)
            os.symlink(os.path.abspath(os.path.join(args.bundled, os.path.basename(key))),
                       os.path.join(data, key))
        windows_path = os.path.join(tmp.name, "windows.json")
        with open(windows_path, "w") as f:
            json.dump(BUNDLED, f, indent=1)
    else:
        data, windows_path = args.data, args.windows
    with open(windows_path) as f:
        windows = json.load(f)

    alerts = synthetic_alerts(windows, data, args.seed)
    alerts_path = os.path.join(tmp.name, "alerts.jsonl")
    with open(alerts_path, "w") as f:
        for a in alerts:
            f.write(json.dumps(a) + "\n")

    failed = 0
    runs = [("defaults", ["ANOMALY", "DISCORD"], "detected", 0.15, []),
            ("every kind, --at start", KINDS, "start", 0.15, ["--kinds", ",".join(KINDS),
                                                             "--at", "start"]),
            ("--kinds MOTIF,GAP --probation 0.3", ["MOTIF", "GAP"], "detected", 0.3,
             ["--kinds", "MOTIF,GAP", "--probation", "0.3"])]
    for name, kinds, at, probation, opts in runs:
        want, _ = expected(windows, data, alerts, set(kinds), at, probation)
        proc = subprocess.run([args.tsmine, "score", "--windows", windows_path, "--data", data]
                              + opts + [alerts_path], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"not ok - {name}: exit {proc.returncode}\n#   {proc.stderr.strip()}")
            failed += 1
            continue
        lines = [json.loads(ln) for ln in proc.stdout.splitlines()]
        got = {ln.get("profile", "summary"): ln for ln in lines}
        bad = []
        for key, fields in want.items():
            for field, value in fields.items():
                if field == "sweep_raw":
                    # the threshold's score as the sweep saw it equals the raw score
                    if not close(value, fields["raw"]):
                        bad.append(f"{key}: sweep {value} != scored {fields['raw']}")
                    continue
                if not close(got.get(key, {}).get(field), value):
                    bad.append(f"{key}.{field}: tsmine {got.get(key, {}).get(field)}, "
                               f"python {value}")
        if bad:
            failed += 1
            print(f"not ok - {name}")
            for b in bad:
                print(f"#   {b}")
        else:
            p = got["standard"]
            print(f"ok - {name}: standard {p['score']:.6f} at threshold {p['threshold']}, "
                  f"as published {p['score_as_published']:.6f} "
                  f"({len(alerts)} alerts, {len(windows)} files)")
    auc_failed = check_auc(args, tmp.name, windows_path, windows, data)
    failed += auc_failed
    print(f"{len(runs) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
