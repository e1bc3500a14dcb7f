# SPDX-License-Identifier: Apache-2.0
"""tsmine.detect and tsmine.Detector against the `tsmine detect` command (TSMINE_CLI), and
tsmine.score against `tsmine score`, on NAB feeds.

The feeds come from the NAB corpus beside the repository (../shared/data/nab, or the
folder TSMINE_NAB names), else from the copies bundled in tests/data (nyc_taxi.csv is
the same file). The command and the package run the same stream engine on the same
samples, so every alert must be the same dict as the command's JSON line, key for key
and in the same order, but detected_at_ns (the wall clock), and every score record the
same numbers as its --scores line (NaN where the line has null): exact equality, no
tolerance. A feed with missing values, two streams in one run, other settings (through
the command's -c file), Detector fed in pieces of any size and with explicit timestamps
give the command's alerts too. Skipped where no `tsmine` with `detect` is given.
"""

import json
import math
import os
import pathlib
import subprocess
import warnings

import numpy as np
import pytest
from conftest import DATA, ROOT

import tsmine

NAB = pathlib.Path(os.environ.get("TSMINE_NAB", ROOT.parent / "shared" / "data" / "nab"))
CORPUS = (NAB / "combined_windows.json").is_file()
#: (data folder, windows file, the feeds' keys in it)
if CORPUS:
    CORPUS_FILES = (NAB, NAB / "combined_windows.json",
                    ["realKnownCause/nyc_taxi.csv", "realTraffic/speed_7578.csv"])
else:
    CORPUS_FILES = (DATA, DATA / "nab_windows.json", ["nyc_taxi.csv", "art_daily_jumpsup.csv"])


@pytest.fixture(scope="module")
def detect_cli():
    path = os.environ.get("TSMINE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tsmine program to compare with (TSMINE_CLI unset)")
    if subprocess.run([path, "detect", "--help"], capture_output=True).returncode != 0:
        pytest.skip("this tsmine has no detect (built without the daemon)")
    return path


def values_of(path):
    """A data file's values as `tsmine detect` reads them (the last column; empty: NaN)."""
    with open(path) as f:
        rows = f.read().splitlines()[1:]
    return np.array([float(r.rsplit(",", 1)[1] or "nan") for r in rows if r.strip()])


def run_cli(cli, files, tmp_path, config=None, period_ns=None):
    """`tsmine detect --scores` on files: (alerts, {stream: score lines})."""
    scores = tmp_path / "scores.jsonl"
    cmd = [cli, "detect", "--backend", "cpu", "--scores", str(scores)]
    if config:
        conf = tmp_path / "tsmined.conf"
        conf.write_text(config)
        cmd += ["-c", str(conf)]
    if period_ns:
        cmd += ["--period-ns", str(period_ns)]
    out = subprocess.run(cmd + [str(f) for f in files], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    lines = {}
    for line in scores.read_text().splitlines():
        d = json.loads(line)
        lines.setdefault(d.pop("stream_id"), []).append(d)
    return [json.loads(line) for line in out.splitlines()], lines


def same_alerts(got, want):
    assert len(got) == len(want), f"{len(got)} alerts, tsmine detect {len(want)}"
    for g, w in zip(got, want):
        assert isinstance(g["detected_at_ns"], int)
        g, w = dict(g), dict(w)
        del g["detected_at_ns"], w["detected_at_ns"]
        assert list(g) == list(w), "the keys and their order"
        assert g == w


def same_scores(got, lines):
    assert got.dtype == tsmine.SCORE_DTYPE and len(got) == len(lines)
    assert list(lines[0]) == list(got.dtype.names), "the fields of a --scores line"
    for name in got.dtype.names:
        want = np.array([math.nan if d[name] is None else d[name] for d in lines])
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def feed(k):
    data, _, keys = CORPUS_FILES
    path = data / keys[k]
    return path.stem, path, values_of(path)


def test_detect_matches_the_command(detect_cli, tmp_path):
    name, path, values = feed(0)
    want, lines = run_cli(detect_cli, [path], tmp_path)
    got, scores = tsmine.detect({name: values}, scores=True, backend="cpu")
    assert len(want) > 10
    same_alerts(got, want)
    same_scores(scores[name], lines[name])
    # a single series is a stream of the id given, and without scores only alerts come
    same_alerts(tsmine.detect(values, stream_id=name, backend="cpu"), want)


def test_missing_values_two_streams_and_settings(detect_cli, tmp_path):
    """A copy of a feed with missing values (a gap: GAP and a restarted window), then a
    second feed in the same run, under settings of a -c file."""
    name, path, values = feed(0)
    with open(path) as f:
        rows = f.read().splitlines()
    for r in (*range(3000, 3040), 6001):  # the value column emptied: NaN for both
        rows[1 + r] = rows[1 + r].rsplit(",", 1)[0] + ","
    holes = tmp_path / "holes.csv"
    holes.write_text("\n".join(rows) + "\n")
    name2, path2, values2 = feed(1)
    settings = {"window": 2048, "hop": 512, "subsequence": 32, "warmup": 400,
                "threshold": 0.99, "left_discord": True, "motif": False}
    conf = "streams = { default = { %s }; };\n" % " ".join(
        f"{k} = {str(v).lower() if isinstance(v, bool) else v};" for k, v in settings.items())
    want, lines = run_cli(detect_cli, [holes, path2], tmp_path, config=conf)
    v = values.copy()
    v[[*range(3000, 3040), 6001]] = np.nan
    got, scores = tsmine.detect({"holes": v, name2: values2}, scores=True, backend="cpu",
                                **settings)
    kinds = {a["kind"] for a in want}
    assert {"GAP", "LEFT_DISCORD"} <= kinds and "MOTIF" not in kinds
    assert {a["stream_id"] for a in want} == {"holes", name2}
    same_alerts(got, want)
    for sid in ("holes", name2):
        same_scores(scores[sid], lines[sid])


def test_detector_in_pieces(detect_cli, tmp_path):
    """Detector.update over pieces of any size gives the command's alerts and scores (the
    engine's alerts do not depend on the batching), with explicit timestamps too."""
    name, path, values = feed(0)
    period = 1_500_000_000
    want, lines = run_cli(detect_cli, [path], tmp_path, period_ns=period)
    det = tsmine.Detector(name, backend="cpu", period_ns=period)
    timed = tsmine.Detector(name, backend="cpu")
    rng = np.random.default_rng(1)
    cuts = np.unique(np.concatenate(([0, len(values)], rng.integers(0, len(values), 40), [1, 2, 3])))
    got, got_t, scores = [], [], []
    for a, b in zip(cuts[:-1], cuts[1:]):
        up = det.update(values[a:b])
        got += up.alerts
        scores.append(up.scores)
        stamps = np.arange(a, b) * period
        if a % 2:
            stamps = stamps.astype("datetime64[ns]")  # as datetime64 too
        got_t += timed.update(values[a:b], timestamps=stamps).alerts
    same_alerts(got, want)
    same_alerts(got_t, want)
    same_scores(np.concatenate(scores), lines[name])
    info = det.info()
    assert info["samples"] == len(values) and info["m"] == want[0]["length"]
    assert det.settings == tsmine.stream_settings() and det.backend == "cpu"
    assert det.info("unknown") is None


def test_settings_and_errors():
    s = tsmine.stream_settings()
    assert s["subsequence"] == "auto" and s["range"] is None and s["window"] == 4096
    fitted = tsmine.stream_settings(subsequence=3000)  # the window follows (tss_params_fit)
    assert fitted["window"] == 6000 and fitted["subsequence"] == 3000
    with pytest.raises(tsmine.InvalidArgumentError, match=r"window must be >= 2 \* subsequence"):
        tsmine.Detector(window=100, subsequence=64)
    with pytest.raises(tsmine.InvalidArgumentError, match="in 4..16777216"):
        tsmine.stream_settings(window=2)
    with pytest.raises(TypeError, match="unknown stream setting"):
        tsmine.detect(np.zeros(10), windw=100)
    with pytest.raises(TypeError):
        tsmine.stream_settings(motif=1)
    det = tsmine.Detector(backend="cpu", window=64, warmup=32)
    det.update(np.arange(10.0), timestamps=np.arange(10) * 10)
    with pytest.raises(tsmine.InvalidArgumentError, match="time_backwards"):
        det.update(np.arange(5.0), timestamps=np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="one per value"):
        det.update(np.arange(5.0), timestamps=np.arange(4))


def nab_rows(data, key):
    """The row of each timestamp of a NAB data file."""
    with open(data / key) as f:
        stamps = [r.split(",")[0][:19] for r in f.read().splitlines()[1:] if r.strip()]
    return {s: k for k, s in enumerate(stamps)}


def test_score_matches_the_command(detect_cli, tmp_path):
    data, windows, keys = CORPUS_FILES
    feeds = [feed(k) for k in range(len(keys))]
    alerts, scores = tsmine.detect({n: v for n, _, v in feeds}, scores=True, backend="cpu")
    want_alerts, _ = run_cli(detect_cli, [p for _, p, _ in feeds], tmp_path)
    same_alerts(alerts, want_alerts)
    alerts_file = tmp_path / "alerts.jsonl"
    alerts_file.write_text("".join(json.dumps(a) + "\n" for a in want_alerts))
    scores_file = tmp_path / "scores.jsonl"  # written by run_cli
    for kw, extra in (({}, []), ({"per_file": True, "at": "start", "kinds": ("ANOMALY",)},
                                 ["--per-file", "--at", "start", "--kinds", "ANOMALY"])):
        cmd = [detect_cli, "score", "--windows", str(windows), "--data", str(data),
               "--scores", str(scores_file), *extra, str(alerts_file)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        want = [json.loads(line) for line in out.splitlines()]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # files of the corpus without score lines
            got = tsmine.score(alerts, windows, data, scores=scores, **kw)
        flat = [*got["profiles"].values(), got["summary"], *got["auc_pr"], *got.get("files", [])]
        assert flat == want
    # the same windows as row numbers, without the data files
    name, _, values = feeds[0]
    with open(windows) as f:
        nab_windows = json.load(f)
    key = keys[0]
    stamp_rows = nab_rows(data, key)
    rows_windows = {name: [(stamp_rows[a[:19]], stamp_rows[b[:19]]) for a, b in nab_windows[key]]}
    mine = [a for a in alerts if a["stream_id"] == name]
    by_rows = tsmine.score(mine, rows_windows, rows={name: len(values)})
    by_nab = tsmine.score(mine, {key: nab_windows[key]}, data)
    assert by_rows == by_nab and by_rows["summary"]["windows"] == len(nab_windows[key])


def test_score_errors_and_notes(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        tsmine.score([], tmp_path / "nowhere.json", tmp_path)
    with pytest.raises(ValueError, match="must be an array"):
        tsmine.score([], {"x.csv": 1}, rows=None, data=DATA)
    with pytest.warns(UserWarning, match='stream "elsewhere" match'):
        r = tsmine.score([{"stream_id": "elsewhere", "kind": "ANOMALY", "start_seq": 1,
                           "length": 3}], {"s": [(10, 20)]}, rows={"s": 100})
    assert r["summary"]["alerts"] == 0
    with pytest.raises(ValueError, match="unknown kind 'NOISE'"):
        tsmine.score([], {"s": [(10, 20)]}, rows={"s": 100}, kinds="NOISE")
    one = tsmine.score([], {"s": [(10, 20)]}, rows={"s": 100}, kinds="ANOMALY")
    assert one["summary"]["windows"] == 1
