# SPDX-License-Identifier: Apache-2.0
"""Streaming in the process: :class:`stumpi` (STUMPY's incremental profile).

:class:`stumpi` keeps the profile of a growing or sliding history up to date, one
value at a time, with the kernels' online left nearest neighbour (``kernels/online.h``;
``src/stumpi.c`` says how).
"""

import math

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
