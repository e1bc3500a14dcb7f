# SPDX-License-Identifier: Apache-2.0
"""STUMPY-compatible entry points: ``tsmine.stump`` and ``tsmine.gpu_stump``.

They return what ``stumpy.stump`` and ``stumpy.gpu_stump`` return for a self-join with
``k = 1``: an ``(N, 4)`` array of dtype object (the profile, the index, the left index,
the right index), of the class :class:`mparray` with the same ``P_``, ``I_``,
``left_I_`` and ``right_I_`` attributes, so that a notebook swaps one import.

How STUMPY's conventions map onto tsmine's (DESIGN 3):

- Exclusion zone: STUMPY ignores ``|i - j| <= ceil(m / 4)`` (``excl_zone`` with its
  ``STUMPY_EXCL_ZONE_DENOM = 4``); tsmine's non-self-matches are ``|i - j| >= excl``, so
  stump uses ``excl = ceil(m / 4) + 1`` (:data:`STUMPY_EXCL_ZONE_DENOM` here sets the
  denominator, as ``stumpy.config`` does there).
- Constant subsequences (max == min): the same in both, 0 between two constants and
  ``sqrt(m)`` between a constant and anything else.
- Missing values (``nan``, ``inf``): tsmine's profile gives ``nan``, STUMPY ``inf``; stump
  gives ``inf`` (index -1) as STUMPY does. A subsequence without an eligible neighbour
  gets ``inf`` and -1 in both.
- Left and right indices: the nearest non-self-match before (``j <= i - excl``) and
  after (``j >= i + excl``), with the conventions above, -1 when none.
- Ties: tsmine takes the smaller index (DESIGN 3); STUMPY's choice among equal distances
  depends on its threads. Distances agree to rounding; an index may differ only where
  several neighbours are equally near (e.g. inside a constant stretch).
- Distances: STUMPY rounds squared distances under 1e-14 to 0 and computes in its own
  order; the two agree to about 1e-8 (python/tests/test_stump.py).

Not supported (``NotImplementedError``): AB-joins (``T_B``), ``ignore_trivial=False``,
``normalize=False``, ``k > 1`` and custom ``T_A_subseq_isconstant``.
"""

import math

import numpy as np

from . import _tsmine
from ._batch import _index, _threads, as_series

#: STUMPY's default ``config.STUMPY_EXCL_ZONE_DENOM``: stump's exclusion zone is
#: ``ceil(m / STUMPY_EXCL_ZONE_DENOM)``.
STUMPY_EXCL_ZONE_DENOM = 4


class mparray(np.ndarray):  # noqa: N801 (STUMPY's name)
    """STUMPY's matrix profile array: ``(N, 2k + 2)`` objects with named columns.

    Attributes
    ----------
    P_ : numpy.ndarray of float64
        The matrix profile (column 0).
    I_ : numpy.ndarray of int64
        The nearest neighbour's index (column 1).
    left_I_ : numpy.ndarray of int64
        The left nearest neighbour's index (column 2).
    right_I_ : numpy.ndarray of int64
        The right nearest neighbour's index (column 3).
    """

    def __new__(cls, input_array, m, k, excl_zone_denom):
        obj = np.asarray(input_array).view(cls)
        obj._m = m
        obj._k = k
        obj._excl_zone_denom = excl_zone_denom
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        self._m = getattr(obj, "_m", None)
        self._k = getattr(obj, "_k", None)
        self._excl_zone_denom = getattr(obj, "_excl_zone_denom", None)

    def _column(self, lo, hi, dtype):
        if self._k == 1:
            return self[:, lo:hi].flatten().astype(dtype)
        return self[:, lo:hi].astype(dtype)

    @property
    def P_(self):  # noqa: N802
        """The matrix profile."""
        return self._column(0, self._k, np.float64)

    @property
    def I_(self):  # noqa: N802
        """The matrix profile indices."""
        return self._column(self._k, 2 * self._k, np.int64)

    @property
    def left_I_(self):  # noqa: N802
        """The left matrix profile indices."""
        return self._column(2 * self._k, 2 * self._k + 1, np.int64)

    @property
    def right_I_(self):  # noqa: N802
        """The right matrix profile indices."""
        return self._column(2 * self._k + 1, 2 * self._k + 2, np.int64)


def _unsupported(T_B, ignore_trivial, normalize, k, T_A_subseq_isconstant, T_B_subseq_isconstant):
    if T_B is not None:
        raise NotImplementedError("tsmine.stump: AB-joins (T_B) are not supported: self-joins only")
    if not ignore_trivial:
        raise NotImplementedError("tsmine.stump: ignore_trivial=False is not supported")
    if not normalize:
        raise NotImplementedError("tsmine.stump: normalize=False is not supported (z-normalised only)")
    if _index(k, "k") != 1:
        raise NotImplementedError(f"tsmine.stump: k = {k} is not supported (k = 1 only)")
    if T_A_subseq_isconstant is not None or T_B_subseq_isconstant is not None:
        raise NotImplementedError(
            "tsmine.stump: T_A_subseq_isconstant is not supported: tsmine's constant "
            "subsequences are those whose max equals their min, STUMPY's default"
        )


def _stump(T_A, m, backend, device, threads):
    t = as_series(T_A, "T_A")
    m = _index(m, "m")
    if m < 0:
        raise ValueError("m must not be negative")
    excl = math.ceil(m / STUMPY_EXCL_ZONE_DENOM) + 1
    N = max(t.size - m + 1, 0)
    P = np.empty(N, dtype=np.float64)
    I = np.empty(N, dtype=np.int64)  # noqa: E741 (STUMPY's name)
    IL = np.empty(N, dtype=np.int64)
    IR = np.empty(N, dtype=np.int64)
    _tsmine._stump(t, m, excl, backend, device, _threads(threads), P, I, IL, IR)
    P[np.isnan(P)] = np.inf  # a subsequence with a missing value: STUMPY's inf
    out = np.empty((N, 4), dtype=object)
    out[:, 0] = P
    out[:, 1:] = np.column_stack((I, IL, IR))
    return mparray(out, m, 1, STUMPY_EXCL_ZONE_DENOM)


def stump(
    T_A,
    m,
    T_B=None,
    ignore_trivial=True,
    normalize=True,
    p=2.0,
    k=1,
    T_A_subseq_isconstant=None,
    T_B_subseq_isconstant=None,
    *,
    backend="cpu",
    threads=None,
):
    """The z-normalised matrix profile in ``stumpy.stump``'s layout, by tsmine's kernels.

    Parameters
    ----------
    T_A : array_like
        The series (real numbers; ``nan`` or ``inf`` marks a missing value).
    m : int
        Window size, ``3 <= m <= len(T_A)``.
    T_B, ignore_trivial, normalize, p, k, T_A_subseq_isconstant, T_B_subseq_isconstant
        As in ``stumpy.stump``; only the self-join defaults are supported (``p`` is
        ignored, as STUMPY ignores it when normalising).
    backend : {"cpu", "auto", "cuda"}, default "cpu"
        tsmine's backend (keyword only; ``stumpy.stump`` is the CPU one).
    threads : int, optional
        OpenMP threads (default: OpenMP's own default).

    Returns
    -------
    mparray
        ``(len(T_A) - m + 1, 4)`` array of dtype object: profile, index, left index,
        right index; also as ``.P_``, ``.I_``, ``.left_I_``, ``.right_I_``. See the
        module's notes for how STUMPY's conventions map onto tsmine's.

    Raises
    ------
    NotImplementedError
        For AB-joins and the other options listed in the notes.
    InvalidArgumentError
        For ``m`` out of range (a ``ValueError``, as STUMPY raises).

    Examples
    --------
    >>> import numpy as np, tsmine
    >>> mp = tsmine.stump(np.cumsum(np.random.default_rng(1).normal(size=1000)), 50)
    >>> mp.shape, mp.dtype, mp.P_.dtype, mp.I_.dtype
    ((951, 4), dtype('O'), dtype('float64'), dtype('int64'))
    """
    del p  # ignored when normalising, as in STUMPY
    _unsupported(T_B, ignore_trivial, normalize, k, T_A_subseq_isconstant, T_B_subseq_isconstant)
    return _stump(T_A, m, backend, -1, threads)


def gpu_stump(
    T_A,
    m,
    T_B=None,
    ignore_trivial=True,
    device_id=0,
    normalize=True,
    p=2.0,
    k=1,
    T_A_subseq_isconstant=None,
    T_B_subseq_isconstant=None,
):
    """:func:`stump` on a CUDA device, in ``stumpy.gpu_stump``'s layout.

    Parameters
    ----------
    T_A, m, T_B, ignore_trivial, normalize, p, k, T_A_subseq_isconstant, T_B_subseq_isconstant
        As in :func:`stump`.
    device_id : int or list of one int, default 0
        The CUDA device (one; STUMPY's lists of several devices are not supported).

    Returns
    -------
    mparray
        As :func:`stump`.

    Raises
    ------
    BackendError
        When there is no usable CUDA device, or the package was built without CUDA.
    """
    del p
    _unsupported(T_B, ignore_trivial, normalize, k, T_A_subseq_isconstant, T_B_subseq_isconstant)
    if isinstance(device_id, (list, tuple)):
        if len(device_id) != 1:
            raise NotImplementedError("tsmine.gpu_stump: one device at a time (device_id)")
        device_id = device_id[0]
    device = _index(device_id, "device_id")
    if device < 0:
        raise ValueError(f"device_id must not be negative, not {device}")
    return _stump(T_A, m, "cuda", device, None)
