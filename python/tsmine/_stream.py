# SPDX-License-Identifier: Apache-2.0
"""Streaming in the process: :class:`stumpi` (STUMPY's incremental profile) and
:class:`Detector` and :func:`detect` (tsmined's detection, without a daemon).

:class:`stumpi` keeps the profile of a growing or sliding history up to date, one
value at a time, with the kernels' online left nearest neighbour (``kernels/online.h``;
``src/stumpi.c`` says how). :class:`Detector` runs the stream engine of ``tsmined``
(``stream/engine.h``) in the process, fed as ``tsmine detect`` feeds it, and returns
what ``tsmined`` would publish for the same samples (``src/py_engine.c``).
"""

import math
import numbers
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from . import _tsmine
from ._batch import _index, _threads, as_series
from ._stumpy import STUMPY_EXCL_ZONE_DENOM

# ---- stumpi -----------------------------------------------------------------------


class stumpi:  # noqa: N801 (STUMPY's name)
    """An incremental matrix profile, ``stumpy.stumpi``'s interface, tsmine's kernels.

    ``tsmine.stumpi(T, m, egress=True)`` starts from the exact profile of ``T`` (the
    batch kernel) and :meth:`update` appends one value at a time, as ``stumpy.stumpi``
    does: with ``egress=True`` the history keeps ``len(T)`` values (the oldest leaves
    with each update), without it the history grows. Each update computes the new
    subsequence's exact left nearest neighbour with the kernels' online left-NN
    (``kernels/online.h``: the QT row by its recurrence, recomputed exactly at a bounded
    interval) and, from the same row, lowers the profile of every earlier subsequence it
    is nearer to. O(history) per update.

    The arrays are STUMPY's: the same lengths, dtypes and meaning, indices counted from
    the first value of ``T`` (with egress an entry may name a neighbour that has since
    left, as in STUMPY), ``inf`` and -1 where there is no neighbour or the subsequence
    holds a missing value (``nan``, ``inf``: held as 0 in :attr:`T_`, as STUMPY holds
    them). STUMPY's exclusion zone, ``ceil(m / 4)`` (:mod:`tsmine._stumpy` says how the
    conventions map). Distances agree with ``stumpy.stumpi`` to about 1e-8
    (``python/tests/test_stumpi.py``); an index may differ only where two neighbours
    are equally near.

    Parameters
    ----------
    T : array_like
        The initial history; with ``egress=True`` at least ``2 m`` values (the online
        kernel's least window).
    m : int
        Subsequence length, ``3 <= m <= len(T)``.
    egress : bool, default True
        Keep ``len(T)`` values (``True``) or every value (``False``).
    normalize, p, k, mp, T_subseq_isconstant_func
        STUMPY's; only their defaults are supported (``NotImplementedError``).
    threads : int, optional
        OpenMP threads of the initial profile (updates run on one).

    Attributes
    ----------
    P_ : numpy.ndarray of float64
        The matrix profile.
    I_ : numpy.ndarray of int64
        The matrix profile indices.
    left_P_ : numpy.ndarray of float64
        The left matrix profile.
    left_I_ : numpy.ndarray of int64
        The left matrix profile indices.
    T_ : numpy.ndarray of float64
        The history.

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> stream = tsmine.stumpi(np.array([584., -11., 23., 79., 1001., 0.]), m=3)
    >>> stream.update(-19.0)
    >>> stream.left_P_
    array([       inf, 3.00009263, 2.69407392, 3.05656417])
    >>> stream.left_I_
    array([-1,  0,  1,  2])
    """

    def __init__(self, T, m, egress=True, normalize=True, p=2.0, k=1, mp=None,
                 T_subseq_isconstant_func=None, *, threads=None):
        if not normalize:
            raise NotImplementedError("tsmine.stumpi: normalize=False is not supported "
                                      "(z-normalised only)")
        if _index(k, "k") != 1:
            raise NotImplementedError(f"tsmine.stumpi: k = {k} is not supported (k = 1 only)")
        if mp is not None:
            raise NotImplementedError("tsmine.stumpi: mp is not supported: the initial profile "
                                      "is computed exactly")
        if T_subseq_isconstant_func is not None:
            raise NotImplementedError(
                "tsmine.stumpi: T_subseq_isconstant_func is not supported: tsmine's constant "
                "subsequences are those whose max equals their min, STUMPY's default")
        t = as_series(T)
        m = _index(m, "m")
        if m < 3 or m > t.size:  # STUMPY's check_window_size, and its ValueError
            raise _tsmine.InvalidArgumentError(
                f"m = {m} is out of range: need 3 <= m <= len(T) = {t.size}")
        self._m = m
        self._egress = bool(egress)
        excl = math.ceil(m / STUMPY_EXCL_ZONE_DENOM) + 1
        self._c = _tsmine.Stumpi(t, m, excl, self._egress, _threads(threads))

    def update(self, t):
        """Appends one value and updates the profile.

        Parameters
        ----------
        t : float
            The new value (``nan`` or ``inf``: missing).

        Returns
        -------
        None
        """
        self._c.update(t)

    def _array(self, what, dtype, n):
        out = np.empty(n, dtype=dtype)
        self._c._copy(what, out)
        return out

    @property
    def P_(self):  # noqa: N802 (STUMPY's name)
        """The matrix profile (a copy)."""
        return self._array(0, np.float64, len(self._c))

    @property
    def I_(self):  # noqa: N802
        """The matrix profile indices (a copy)."""
        return self._array(1, np.int64, len(self._c))

    @property
    def left_P_(self):  # noqa: N802
        """The left matrix profile (a copy)."""
        return self._array(2, np.float64, len(self._c))

    @property
    def left_I_(self):  # noqa: N802
        """The left matrix profile indices (a copy)."""
        return self._array(3, np.int64, len(self._c))

    @property
    def T_(self):  # noqa: N802
        """The history (a copy; a missing value is 0 there, as in STUMPY)."""
        return self._array(4, np.float64, self._c.length)


# ---- Detector and detect ----------------------------------------------------------

#: One scored subsequence: the fields of a ``tsmine detect --scores`` line (its
#: ``stream_id`` aside), ``nan`` where the line has ``null``; ``view`` names the view the
#: ``score`` comes from (``"none"`` before there is one).
SCORE_DTYPE = np.dtype([(name, "<U9" if name == "view" else fmt)
                        for name, fmt, _ in _tsmine.SCORE_FIELDS])

# the records as the extension module writes them (the view as its number)
_RAW_SCORE_DTYPE = np.dtype({
    "names": [f[0] for f in _tsmine.SCORE_FIELDS],
    "formats": [f[1] for f in _tsmine.SCORE_FIELDS],
    "offsets": [f[2] for f in _tsmine.SCORE_FIELDS],
    "itemsize": _tsmine.SCORE_SIZE,
})
_VIEW_NAMES = np.array(_tsmine.VIEW_NAMES + ("unknown",))


def _score_records(raws):
    """The extension module's score records (bytes objects) as one SCORE_DTYPE array."""
    raw = np.frombuffer(b"".join(raws), dtype=_RAW_SCORE_DTYPE)
    out = np.empty(raw.size, dtype=SCORE_DTYPE)
    for name in SCORE_DTYPE.names:
        if name == "view":
            out[name] = _VIEW_NAMES[np.minimum(raw[name], _VIEW_NAMES.size - 1)]
        else:
            out[name] = raw[name]
    return out


#: ``tsmine detect`` feeds each stream in batches of at most this many samples (or of its
#: window, when shorter), a tick after each (tools/cli/cmd_detect.c).
DETECT_BATCH = 256

#: The stream settings as tsmined's configuration takes them (config/settings.c,
#: tsci_stream_settings): kind and bounds; tss_params_check judges how they fit together.
_SETTINGS = {
    "window": ("int", 4, 1 << 24),
    "subsequence": ("int_auto", 3, 1 << 23),
    "hop": ("int", 1, 1 << 24),
    "excl": ("int", 0, 1 << 24),
    "warmup": ("int", 1, 1 << 24),
    "threshold": ("number", 0, 1),
    "threshold_end": ("number", 0, 1),
    "range": ("range", 0, math.inf),
    "motif": ("bool", 0, 1),
    "references": ("int", 0, 1024),
    "left_discord": ("bool", 0, 1),
}


def _settings(given):
    """The settings a user gave, checked as the configuration checks them, for the C side
    (subsequence "auto" -> 0, range "auto" or None -> nan)."""
    out = {}
    for name, value in given.items():
        if name not in _SETTINGS:
            raise TypeError(f"unknown stream setting {name!r} (known: {', '.join(_SETTINGS)})")
        kind, lo, hi = _SETTINGS[name]
        if kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, not {value!r}")
            out[name] = bool(value)
            continue
        if kind in ("int_auto", "range") and (value == "auto" or (kind == "range" and value is None)):
            out[name] = 0 if kind == "int_auto" else math.nan
            continue
        if kind in ("int", "int_auto"):
            v = _index(value, name)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            v = float(value)
        else:
            raise TypeError(f"{name} must be a number{' or auto' if kind == 'range' else ''}, "
                            f"not {value!r}")
        if not (lo <= v <= hi) or (kind == "range" and not math.isfinite(v)):
            bound = f"a finite number >= {lo}" if kind == "range" else f"in {lo}..{hi}"
            raise _tsmine.InvalidArgumentError(f"{name} must be {bound} (got {value!r})")
        out[name] = v
    return out


def stream_settings(**settings):
    """A stream's detection parameters as ``tsmined`` resolves them.

    The settings a user leaves out follow those given, as in the configuration's
    ``streams.default`` group (a larger ``subsequence`` widens the default window, ...);
    a conflict between given ones is an error.

    Parameters
    ----------
    **settings
        ``window``, ``subsequence`` (an int or ``"auto"``), ``hop``, ``excl``, ``warmup``,
        ``threshold``, ``threshold_end``, ``range`` (a distance, or ``"auto"``/``None``),
        ``motif``, ``references``, ``left_discord``: ``tsmined.conf``'s stream keys
        (tsmined.conf(5), docs/detection.md).

    Returns
    -------
    dict
        Every key with the value in force.

    Raises
    ------
    InvalidArgumentError
        For a value out of its bounds or settings that conflict (the library's message).
    TypeError
        For an unknown key or a value of the wrong type.

    Examples
    --------
    >>> import tsmine
    >>> s = tsmine.stream_settings(subsequence=64)
    >>> s["subsequence"], s["window"], s["hop"]
    (64, 4096, 1024)
    """
    return _tsmine._stream_params(_settings(settings))


class Update(NamedTuple):
    """What :meth:`Detector.update` returns.

    Attributes
    ----------
    scores : numpy.ndarray or None
        One record per subsequence the values completed (:data:`SCORE_DTYPE`: the fields
        of ``tsmine detect --scores``), in order; ``None`` for a detector made with
        ``scores=False``.
    alerts : list of dict
        The alerts, as ``tsmine detect`` prints them.
    """

    scores: np.ndarray
    alerts: list


def _stream_id(s):
    if not isinstance(s, str):
        raise TypeError(f"a stream id must be a str, not {type(s).__name__}")
    return s


def _timestamps(timestamps, n):
    """Timestamps as int64 nanoseconds (datetime64 of any unit, or integers)."""
    ts = np.asarray(timestamps)
    if ts.dtype.kind == "M":
        ts = ts.astype("datetime64[ns]").view(np.int64)
    elif ts.dtype.kind not in "iu":
        raise TypeError(f"timestamps must be integers (nanoseconds) or datetime64, not {ts.dtype}")
    if ts.shape != (n,):
        raise ValueError(f"timestamps: one per value ({n}), not of shape {ts.shape}")
    return np.ascontiguousarray(ts, dtype=np.int64)


class Detector:
    """tsmined's detection in the process: the same stream engine, no daemon.

    Values given to :meth:`update` go through ``tsmined``'s stream engine
    (``stream/engine.h``) exactly as ``tsmine detect`` feeds a file to it: value ``k``
    of a stream has sequence number ``k`` (counted over every update of that stream) and
    timestamp ``k * period_ns`` unless timestamps are given; missing values (``nan``,
    ``inf``) are left out, a gap, as ``tsmine replay`` leaves them out; the values go in
    batches of at most 256 (or the window) with a tick after each. Each update returns the
    alerts the daemon would publish for those values, as the dicts of ``tsmine detect``'s
    JSON lines (``alert_id`` counted from 1 per detector, ``detected_at_ns`` the wall
    clock), and the score of every subsequence they complete (``tsmine detect --scores``).

    Parameters
    ----------
    stream_id : str, default "stream"
        The stream :meth:`update` feeds unless told another.
    backend : {"auto", "cpu", "cuda"}, default "auto"
    threads : int, optional
        CPU threads of the engine (default: OpenMP's).
    period_ns : int, default 1000000000
        Without timestamps, value ``k`` has timestamp ``k * period_ns``.
    scores : bool, default True
        Return the score of every subsequence (costs a little: the engine then computes
        every view of each, not only where an alert needs them).
    **settings
        The stream settings, as :func:`stream_settings` takes them (every stream of the
        detector has the same).

    Attributes
    ----------
    settings : dict
        The parameters in force (:func:`stream_settings`).
    backend : str
        The backend the engine runs.

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> T = np.sin(np.arange(3000) * 2 * np.pi / 50)
    >>> T[2000:2010] += 2.0
    >>> det = tsmine.Detector("sensor", window=1024, motif=False)
    >>> up = det.update(T[:1500])
    >>> len(up.scores), up.alerts, det.info()["m"]
    (1401, [], 50)
    >>> up = det.update(T[1500:])
    >>> [a["kind"] for a in up.alerts], up.alerts[0]["start_seq"], up.alerts[0]["view"]
    (['ANOMALY', 'ANOMALY_END'], 1951, 'magnitude')
    """

    def __init__(self, stream_id="stream", *, backend="auto", threads=None,
                 period_ns=1_000_000_000, scores=True, **settings):
        self.stream_id = _stream_id(stream_id)
        self._period = _index(period_ns, "period_ns")
        if not 1 <= self._period <= (2**63 - 1) >> 32:  # tsmine detect --period-ns's bound
            raise ValueError(f"period_ns must be in 1..{(2**63 - 1) >> 32}, not {self._period}")
        self._scores = bool(scores)
        self._engine = _tsmine.Engine(_settings(settings), backend, _threads(threads),
                                      self._scores)
        self._next = {}

    @property
    def settings(self):
        """The parameters in force for every stream."""
        return self._engine.params

    @property
    def backend(self):
        """The backend the engine runs (``"cpu"`` or ``"cuda"``)."""
        return self._engine.backend

    def update(self, values, timestamps=None, *, stream_id=None):
        """Feeds values of a stream to the engine; the scores and alerts they give.

        Parameters
        ----------
        values : array_like
            The stream's next values (float64; ``nan``/``inf``: missing, a gap).
        timestamps : array_like, optional
            One per value, int64 nanoseconds or datetime64, never decreasing; default
            ``seq * period_ns``.
        stream_id : str, optional
            The stream (default: the detector's).

        Returns
        -------
        Update
            ``(scores, alerts)``: a :data:`SCORE_DTYPE` array of the subsequences the
            values completed (``None`` with ``scores=False``) and the list of alerts.

        Raises
        ------
        InvalidArgumentError
            When the engine refuses a batch (its reason: e.g. ``time_backwards``); the
            batches before it were processed, their alerts are lost with the exception.
        Error
            When a kernel fails.
        """
        sid = self.stream_id if stream_id is None else _stream_id(stream_id)
        v = as_series(values, "values")
        first = self._next.get(sid, 0)
        ts = None if timestamps is None else _timestamps(timestamps, v.size)
        batch = min(DETECT_BATCH, self.settings["window"])
        alerts, scores = self._engine.ingest(sid, first, v, ts, first * self._period,
                                             self._period, batch)
        self._next[sid] = first + v.size
        if not self._scores:
            return Update(None, alerts)
        return Update(_score_records([raw for s, raw in scores if s == sid]), alerts)

    def info(self, stream_id=None):
        """What the engine holds for a stream.

        Parameters
        ----------
        stream_id : str, optional
            The stream (default: the detector's).

        Returns
        -------
        dict or None
            ``m`` (the subsequence length in force; 0 while ``"auto"`` waits for its
            warm-up), ``period`` (the period an automatic ``m`` came from), ``samples``,
            ``next_seq``, ``window_fill``, ``events``, ``gaps``, ``calibrated``,
            ``last_score``, ``params``; ``None`` for a stream not seen.
        """
        return self._engine.info(self.stream_id if stream_id is None else _stream_id(stream_id))


def detect(T, scores=False, *, stream_id="series", backend="auto", threads=None,
           period_ns=1_000_000_000, **settings):
    """The alerts ``tsmine detect`` prints for a series, or for several streams.

    The stream engine of ``tsmined`` over the values, as ``tsmine detect FILE...`` runs
    it (see :class:`Detector`): the same alerts, as dicts of its JSON lines.

    Parameters
    ----------
    T : array_like or dict
        A series, or a dict ``{stream_id: series}`` fed one after the other (as the
        command takes its files, one stream each).
    scores : bool, default False
        Also return every subsequence's score (``tsmine detect --scores``).
    stream_id : str, default "series"
        The stream id of a single series (the command names it after its file).
    backend : {"auto", "cpu", "cuda"}, default "auto"
    threads : int, optional
    period_ns : int, default 1000000000
        Value ``k`` of a stream has timestamp ``k * period_ns``.
    **settings
        The stream settings (:func:`stream_settings`); the daemon's defaults without.

    Returns
    -------
    alerts : list of dict
        Every alert, in the order the engine published them.
    scores : numpy.ndarray or dict
        With ``scores=True`` only: a :data:`SCORE_DTYPE` array, or for a dict of streams
        a dict of them by stream id.

    Raises
    ------
    InvalidArgumentError
        For settings out of bounds or in conflict, or values the engine refuses.

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> T = np.sin(np.arange(3000) * 2 * np.pi / 50)
    >>> T[2000:2010] += 2.0
    >>> [a["kind"] for a in tsmine.detect(T, window=1024, motif=False)]
    ['ANOMALY', 'ANOMALY_END']
    """
    streams = T.items() if isinstance(T, Mapping) else [(stream_id, T)]
    det = Detector(backend=backend, threads=threads, period_ns=period_ns, scores=scores,
                   **settings)
    alerts, per = [], {}
    for sid, values in streams:
        up = det.update(values, stream_id=_stream_id(sid))
        alerts.extend(up.alerts)
        per[sid] = up.scores
    if not scores:
        return alerts
    return alerts, (per if isinstance(T, Mapping) else per[stream_id])
