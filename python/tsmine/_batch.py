# SPDX-License-Identifier: Apache-2.0
"""The batch functions: numpy arrays in, numpy arrays out, tsmine's exact kernels.

Each function converts the series to a C-contiguous float64 array (without a copy when
it already is one), allocates its outputs and calls the extension module, which runs
the kernel without the GIL. Definitions (distance, constants, missing values, exclusion
zone, ties) are DESIGN 3's, the same as the ``tsmine`` command's.
"""

import logging
import operator
from typing import NamedTuple

import numpy as np

from . import _tsmine

log = logging.getLogger("tsmine")

# m="auto" as `tsmine -m auto` takes it (tools/cli/cli.c, AUTO_M_*): the series'
# dominant period in [8, min(2048, n / 4)], else 100 clamped to that range, from 32
# values on. python/tests/test_batch.py checks that both choose the same m.
AUTO_M_MIN = 8
AUTO_M_MAX = 2048
AUTO_M_DEFAULT = 100

#: One discord: ``tsmine discord``'s fields.
DISCORD_DTYPE = np.dtype([("index", "<i8"), ("distance", "<f8"), ("neighbor", "<i8")])
#: One motif pair: ``tsmine motif``'s fields, ``a < b``.
MOTIF_DTYPE = np.dtype([("a", "<i8"), ("b", "<i8"), ("distance", "<f8")])
assert DISCORD_DTYPE.itemsize == _tsmine.DISCORD_SIZE
assert MOTIF_DTYPE.itemsize == _tsmine.MOTIF_SIZE


class _ProfileTuple(NamedTuple):
    distance: np.ndarray
    neighbor: np.ndarray


class Profile(_ProfileTuple):
    """A matrix profile: ``(distance, neighbor)``, unpackable as a pair.

    Attributes
    ----------
    distance : numpy.ndarray of float64
        Distance of every subsequence to its nearest non-self-match: ``+inf`` when it
        has no eligible neighbour, ``nan`` when it holds a missing value.
    neighbor : numpy.ndarray of int64
        That neighbour's index; -1 where the distance is ``inf`` or ``nan``.
    m : int
        The subsequence length used (the one chosen for ``m="auto"``).
    excl : int
        The exclusion zone used.
    backend : str
        ``"cpu"`` or ``"cuda"``: the backend that ran.
    """

    # no __slots__: instances carry m, excl and backend


class Records(np.ndarray):
    """A structured array of discords or motifs with the parameters that found them.

    Fields as the ``tsmine`` command prints them: ``index``, ``distance``, ``neighbor``
    for discords; ``a``, ``b``, ``distance`` for motifs. Besides them, ``m``, ``excl``
    and ``backend`` as in :class:`Profile`.
    """

    def __array_finalize__(self, obj):
        self.m = getattr(obj, "m", None)
        self.excl = getattr(obj, "excl", None)
        self.backend = getattr(obj, "backend", None)


def as_series(T, name="T"):
    """``T`` as a one-dimensional, C-contiguous float64 array.

    Real numbers of any dtype (bool, integers, float32, ...) are converted; a list or
    object array is converted when every element is a number or ``None`` (which numpy
    turns into ``nan``: a missing value). A float64 array that is already contiguous is
    used as it is, without a copy.

    Raises
    ------
    TypeError
        For complex, string or other non-numeric values.
    ValueError
        When ``T`` is not one-dimensional.
    """
    a = np.asarray(T)
    if a.dtype.kind == "O":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name} must hold real numbers (or None for a missing value): {e}") from None
    elif a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, not {a.dtype} values")
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (a series), not of shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float64)


def _index(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    return operator.index(v)


def _threads(threads):
    t = 0 if threads is None else _index(threads, "threads")
    if t < 0:
        raise ValueError(f"threads must not be negative, not {t}")
    return t


def auto_m(T):
    """The subsequence length ``m="auto"`` takes, and the period it came from.

    The same rule as ``tsmine ... -m auto``: the series' dominant period by
    autocorrelation, looked for in ``[8, min(2048, n / 4)]``; 100 (clamped to that
    range) when it has none.

    Parameters
    ----------
    T : array_like
        The series (at least 32 values).

    Returns
    -------
    m : int
        The subsequence length.
    period : int
        The period found, 0 when there is none (``m`` is then the default).

    Raises
    ------
    InvalidArgumentError
        For fewer than 32 values.
    """
    t = as_series(T)
    if t.size < 4 * AUTO_M_MIN:
        raise _tsmine.InvalidArgumentError(
            f"m='auto': {t.size} values are too few to choose m "
            f"(need {4 * AUTO_M_MIN} or more; give m as a number)"
        )
    hi = min(t.size // 4, AUTO_M_MAX)
    return _tsmine._auto_m(t, AUTO_M_MIN, hi, AUTO_M_DEFAULT)


def _shape(t, m, excl):
    """(m, excl) with m="auto" resolved and excl defaulting to m."""
    if isinstance(m, str):
        if m != "auto":
            raise ValueError(f"m must be an integer or 'auto', not {m!r}")
        m, period = auto_m(t)
        if period:
            log.info("m='auto': m = %d (period %d)", m, period)
        else:
            log.info("m='auto': m = %d (no period found: default)", m)
    else:
        m = _index(m, "m")
    excl = m if excl is None else _index(excl, "excl")
    return m, excl


def _records(raw, dtype, m, excl, backend):
    out = np.frombuffer(raw, dtype=dtype).copy().view(Records)
    out.m, out.excl, out.backend = m, excl, backend
    return out


def profile(T, m, *, left=False, excl=None, backend="auto", threads=None):
    """The matrix profile: every subsequence's nearest-neighbour distance and index.

    Parameters
    ----------
    T : array_like
        The series, one-dimensional, real numbers (converted to float64); ``nan`` or
        ``inf`` marks a missing value.
    m : int or "auto"
        Subsequence length, ``3 <= m <= len(T)``; ``"auto"`` chooses it as
        :func:`auto_m` does.
    left : bool, default False
        The left profile: only neighbours that start at least ``excl`` before.
    excl : int, optional
        Exclusion zone: ``i`` and ``j`` are non-self-matches when ``|i - j| >= excl``.
        Default ``m`` (non-overlapping).
    backend : {"auto", "cpu", "cuda"}, default "auto"
        ``"auto"`` runs CUDA when a usable GPU is present, else the CPU.
    threads : int, optional
        OpenMP threads of the CPU backend (default: OpenMP's own default).

    Returns
    -------
    Profile
        ``(distance, neighbor)`` arrays of ``len(T) - m + 1`` entries, with ``m``,
        ``excl`` and ``backend`` as attributes. Distances are z-normalised Euclidean
        (DESIGN 3): a constant subsequence is at 0 from another constant and at
        ``sqrt(m)`` from anything else; a subsequence with a missing value gets ``nan``
        and -1 and is nobody's neighbour; one without an eligible neighbour gets
        ``inf`` and -1. Ties go to the smaller index.

    Raises
    ------
    InvalidArgumentError
        For ``m`` or ``excl`` out of range (the library's message).
    BackendError
        When ``backend="cuda"`` and no CUDA device (or no CUDA build) is there.

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> T = np.sin(np.arange(200) / 5.0)
    >>> d, j = tsmine.profile(T, 20)
    >>> d.shape, int(j[0])
    ((181,), 157)
    """
    t = as_series(T)
    m, excl = _shape(t, m, excl)
    N = max(t.size - m + 1, 0)
    dist = np.empty(N, dtype=np.float64)
    index = np.empty(N, dtype=np.int64)
    used = _tsmine._profile(t, m, excl, bool(left), backend, _threads(threads), dist, index)
    out = Profile(dist, index)
    out.m, out.excl, out.backend = m, excl, used
    return out


def discords(T, m, k=1, *, excl=None, seglen=0, backend="auto", threads=None):
    """The top-k discords: the subsequences farthest from their nearest neighbour.

    Chosen greedily (DESIGN 3): the largest nearest-neighbour distance first, each next
    one a non-self-match of those before it; found exactly by PD3 passes over a
    descending range (DESIGN 4.2), as ``tsmine discord -k K`` does.

    Parameters
    ----------
    T : array_like
        The series (see :func:`profile`).
    m : int or "auto"
        Subsequence length (see :func:`profile`).
    k : int, default 1
        How many discords.
    excl : int, optional
        Exclusion zone, default ``m``.
    seglen : int, default 0
        Subsequences per PD3 segment; 0 for the library's default (512).
    backend : {"auto", "cpu", "cuda"}, default "auto"
    threads : int, optional

    Returns
    -------
    Records
        Structured array, best first, of fields ``index``, ``distance`` (to the
        nearest neighbour) and ``neighbor``; fewer than ``k`` rows when fewer
        non-overlapping subsequences have a neighbour.

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> T = np.sin(np.arange(1000) / 10.0)
    >>> T[500:510] += 1.0
    >>> int(tsmine.discords(T, 50)[0]["index"]) in range(460, 510)
    True
    """
    t = as_series(T)
    m, excl = _shape(t, m, excl)
    raw, used = _tsmine._discords(
        t, m, excl, _index(k, "k"), _index(seglen, "seglen"), backend, _threads(threads)
    )
    return _records(raw, DISCORD_DTYPE, m, excl, used)


def range_discords(T, m, r, *, excl=None, seglen=0, backend="auto", threads=None):
    """Every range discord: the subsequences whose nearest neighbour is at ``r`` or more.

    Parameters
    ----------
    T : array_like
        The series (see :func:`profile`).
    m : int or "auto"
        Subsequence length.
    r : float
        The range, a distance (not squared), ``r >= 0``.
    excl : int, optional
        Exclusion zone, default ``m``.
    seglen : int, default 0
        Subsequences per PD3 segment; 0 for the default (512).
    backend : {"auto", "cpu", "cuda"}, default "auto"
    threads : int, optional

    Returns
    -------
    Records
        Structured array ordered by index, of fields ``index``, ``distance`` (exact
        nearest-neighbour distance) and ``neighbor``, as ``tsmine discord -r R``.
    """
    t = as_series(T)
    m, excl = _shape(t, m, excl)
    raw, used = _tsmine._range_discords(
        t, m, excl, float(r), _index(seglen, "seglen"), backend, _threads(threads)
    )
    return _records(raw, DISCORD_DTYPE, m, excl, used)


def motifs(
    T, m, k=1, *, excl=None, method="auto", refs=0, seed=None, backend="auto", threads=None
):
    """The top-k motifs: the closest pairs of non-overlapping subsequences.

    Found exactly, as ``tsmine motif -k K`` does: the closest pair first, each next pair
    at least ``excl`` from every member of those before it.

    Parameters
    ----------
    T : array_like
        The series (see :func:`profile`).
    m : int or "auto"
        Subsequence length.
    k : int, default 1
        How many pairs.
    excl : int, optional
        Exclusion zone, default ``m``.
    method : {"auto", "scan", "mk"}, default "auto"
        ``"scan"`` scans every pair along the diagonals as :func:`profile` does,
        keeping the best; ``"mk"`` runs MK (DESIGN 4.3), whose bounds from reference
        subsequences prune a data-dependent share of the pairs (slower on every series
        measured); ``"auto"`` takes MK on a series with constant stretches, else the
        scan, then MK when the scan's pairs are near-exact repeats (1 - correlation
        <= 1e-9), where many pairs tie and MK's order names the pair. The same pairs but for distances tied to rounding.
    refs : int, default 0
        Reference subsequences of MK; 0 for the default (10).
    seed : int, optional
        Seed for drawing the references (default: the library's fixed one). The pairs
        do not depend on it, only the work done.
    backend : {"auto", "cpu", "cuda"}, default "auto"
    threads : int, optional

    Returns
    -------
    Records
        Structured array, best first, of fields ``a``, ``b`` (``a < b``) and
        ``distance``.
    """
    t = as_series(T)
    m, excl = _shape(t, m, excl)
    seed = _tsmine.MK_SEED_DEFAULT if seed is None else _index(seed, "seed")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), not {seed}")
    if method not in ("auto", "scan", "mk"):
        raise ValueError(f"method must be 'auto', 'scan' or 'mk', not {method!r}")
    raw, used = _tsmine._motifs(
        t,
        m,
        excl,
        _index(k, "k"),
        _index(refs, "refs"),
        seed,
        backend,
        _threads(threads),
        ("auto", "scan", "mk").index(method),
    )
    return _records(raw, MOTIF_DTYPE, m, excl, used)


def backends():
    """What this build and machine offer.

    Returns
    -------
    dict
        ``cuda_built``: whether the package was built with the CUDA backend;
        ``auto``: the backend ``backend="auto"`` runs here (``"cpu"`` or ``"cuda"``);
        ``why``: why ``"auto"`` does not take CUDA (``None`` when it does).
    """
    built, auto, why = _tsmine._probe()
    return {"cuda_built": built, "auto": auto, "why": why}
