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

    score_crosscheck.py --tsmine TSMINE --windows combined_windows.json --data DIR
    score_crosscheck.py --tsmine TSMINE --bundled tests/data    # the 3 bundled NAB files

Standard library only. Prints `ok - NAME` / `not ok - NAME` per check; exits 1 when
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
    print(f"{len(runs) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
