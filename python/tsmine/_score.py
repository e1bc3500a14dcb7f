# SPDX-License-Identifier: Apache-2.0
"""``tsmine.score``: ``tsmine score`` on alerts and scores held in Python.

The command itself runs (``src/score.c`` calls ``tools/cli/cmd_score.c`` in the
process): this module only writes what it reads (the alerts as JSON lines, the windows
as NAB's ``combined_windows.json``, the score lines of ``tsmine detect --scores``) into a
temporary folder, and reads back the JSON lines it prints.
"""

import json
import math
import os
import tempfile
import warnings
from collections.abc import Mapping

import numpy as np

from . import _tsmine

#: The kinds ``tsmine score`` counts by default.
SCORE_KINDS = ("ANOMALY", "DISCORD")

# the command's exit statuses (sysexits.h) -> the exception raised
_FAILURES = {64: ValueError, 65: ValueError, 66: FileNotFoundError, 74: OSError}


def _is_path(x):
    return isinstance(x, (str, os.PathLike))


def _number(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, allow_nan=False))
            f.write("\n")


def _score_lines(scores):
    """The lines of ``tsmine detect --scores`` from {stream_id: records}."""
    for sid, rec in scores.items():
        rec = np.asarray(rec)
        names = rec.dtype.names or ()
        for r in rec:
            line = {"stream_id": sid}
            for name in names:
                v = r[name]
                if isinstance(v, (str, np.str_)):
                    line[name] = str(v)
                elif np.issubdtype(type(v), np.integer):
                    line[name] = int(v)
                else:
                    line[name] = _number(v)
            yield line


def _synthetic_corpus(tmp, windows, rows, labels):
    """Data files of rows[name] rows with timestamps one second apart, and the windows
    (and point labels) of row numbers as their timestamps: the NAB form the command
    reads. Returns (windows dict, labels dict or None)."""
    base = np.datetime64("2000-01-01T00:00:00", "s")
    out_w, out_l = {}, ({} if labels is not None else None)
    for name, n in rows.items():
        n = int(n)
        stamps = (base + np.arange(n).astype("timedelta64[s]")).astype(str)
        key = f"{name}.csv"
        path = os.path.join(tmp, "data", key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("timestamp,value\n")
            f.writelines(f"{s},0\n" for s in stamps)

        def stamp(row, what):
            row = int(row)
            if not 0 <= row < n:
                raise ValueError(f"{what} row {row} of {name!r} is outside its {n} rows")
            return str(stamps[row])

        out_w[key] = [[stamp(a, "window"), stamp(b, "window")] for a, b in windows.get(name, [])]
        if labels is not None:
            out_l[key] = [stamp(r, "label") for r in labels.get(name, [])]
    for name in list(windows) + list(labels or {}):
        if name not in rows:
            raise ValueError(f"windows or labels of {name!r}, which rows does not give")
    return out_w, out_l


def score(alerts, windows, data=None, *, rows=None, scores=None, labels=None,
          at="detected", kinds=SCORE_KINDS, probation=0.15, per_file=False,
          score_field="score", subsequence=None):
    """Alerts, and per-row scores, measured as ``tsmine score`` measures them.

    NAB's scoring rules for the alerts (the threshold NAB's optimiser picks and the
    alerts as published, under its three profiles), the event counts of the stream as
    published, and, for score lines, the area under the precision-recall curve: the
    ``tsmine score`` command itself runs on them (``tsmine score --help`` says how it
    counts).

    Parameters
    ----------
    alerts : list of dict, path or None
        Alerts as :func:`detect`, :class:`Detector` or :func:`alerts` give them (or a
        file of JSON lines, as ``tsmine detect`` prints them); ``None`` with ``scores``
        only. A stream's alerts belong to the data file named as its id (its base name
        without extension), sample ``k`` to row ``k``.
    windows : dict or path
        The labelled windows. NAB's form (a ``combined_windows.json`` file, or such a
        dict ``{"dir/file.csv": [[start, end], ...]}`` of timestamps) with ``data`` the
        folder of the data files; or, with ``rows``, ``{stream_id: [(a, b), ...]}`` of
        row numbers (inclusive).
    data : path, optional
        The folder of the data files NAB's form names (their timestamps give the rows).
    rows : dict, optional
        ``{stream_id: number of rows}``: windows and labels are row numbers, and no data
        files are needed.
    scores : dict, optional
        ``{stream_id: records}`` with the fields of ``tsmine detect --scores`` (the
        :data:`SCORE_DTYPE` arrays of :func:`detect` and :class:`Detector`), or a path to
        such lines: adds the precision-recall areas.
    labels : dict or path, optional
        Point labels (NAB's ``combined_labels.json`` form, or with ``rows`` lists of row
        numbers) for the precision-recall areas.
    at : {"detected", "start"}, default "detected"
        The row of an alert: the sample that produced it, or its subsequence's start.
    kinds : str or sequence of str, default ("ANOMALY", "DISCORD")
        The alert kinds that count.
    probation : float, default 0.15
        The leading fraction of each file that is not scored.
    per_file : bool, default False
        Also one result per data file.
    score_field : str, default "score"
        The field of the score lines ranked.
    subsequence : int, optional
        m of score lines that do not name theirs.

    Returns
    -------
    dict
        The command's JSON lines as dicts: ``"profiles"`` (by profile name: ``score``,
        ``raw``, ``threshold``, ``score_as_published``, ...) and ``"summary"`` when
        alerts were given, ``"auc_pr"`` (a list) with scores, ``"files"`` (a list) with
        ``per_file``.

    Raises
    ------
    ValueError
        For input the command refuses (its message).
    FileNotFoundError
        For a file it cannot open.

    Warns
    -----
    UserWarning
        What the command notes on input it could not place (a stream without a data
        file, alerts past a file's end).

    Examples
    --------
    >>> import tsmine
    >>> alerts = [{"stream_id": "s", "kind": "ANOMALY", "start_seq": 500, "length": 10,
    ...            "detected_seq": 505, "score": 0.999}]
    >>> r = tsmine.score(alerts, {"s": [(505, 520)]}, rows={"s": 1000})
    >>> r["profiles"]["standard"]["score"], r["summary"]["windows_hit"]
    (100, 1)
    """
    if alerts is None and scores is None:
        raise ValueError("score: nothing to score (alerts, scores or both)")
    if at not in ("detected", "start"):
        raise ValueError(f"at must be 'detected' or 'start', not {at!r}")
    if isinstance(kinds, str):  # one kind
        kinds = (kinds,)
    with tempfile.TemporaryDirectory(prefix="tsmine-score-") as tmp:
        args = []
        if rows is not None:
            if not isinstance(windows, Mapping) or (labels is not None and not isinstance(labels, Mapping)):
                raise TypeError("with rows, windows (and labels) must be dicts of row numbers")
            windows, labels = _synthetic_corpus(tmp, windows, rows, labels)
            data = os.path.join(tmp, "data")
        elif data is None:
            raise TypeError("score: give data (the folder of NAB's data files) or rows")
        for name, what in (("windows", windows), ("labels", labels)):
            if what is None or _is_path(what):
                continue
            path = os.path.join(tmp, f"{name}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(dict(what), f)
            if name == "windows":
                windows = path
            else:
                labels = path
        args += ["--windows", os.fspath(windows), "--data", os.fspath(data), "--at", at,
                 "--kinds", ",".join(kinds), "--probation", repr(float(probation)),
                 "--score-field", score_field]
        if per_file:
            args.append("--per-file")
        if labels is not None:
            args += ["--labels", os.fspath(labels)]
        if subsequence is not None:
            args += ["--subsequence", str(int(subsequence))]
        if scores is not None:
            path = scores
            if not _is_path(scores):
                path = os.path.join(tmp, "scores.jsonl")
                _write_lines(path, _score_lines(scores))
            args += ["--scores", os.fspath(path)]
        if alerts is not None:
            path = alerts
            if not _is_path(alerts):
                path = os.path.join(tmp, "alerts.jsonl")
                _write_lines(path, alerts)
            args.append(os.fspath(path))
        status, out, err = _tsmine._score(args)
    said = [line.removeprefix("tsmine: ") for line in err.splitlines() if line.strip()]
    if status != 0:
        raise _FAILURES.get(status, _tsmine.Error)("; ".join(said) or f"tsmine score: status {status}")
    for line in said:
        warnings.warn(line, stacklevel=2)
    result = {}
    for line in out.splitlines():
        d = json.loads(line)
        if "profile" in d:
            result.setdefault("profiles", {})[d["profile"]] = d
        elif d.get("summary"):
            result["summary"] = d
        elif "file" in d:  # before auc_pr: a file's line holds its own areas under that key
            result.setdefault("files", []).append(d)
        elif "auc_pr" in d:
            result.setdefault("auc_pr", []).append(d)
    return result
