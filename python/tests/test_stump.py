# SPDX-License-Identifier: Apache-2.0
"""tsmine.stump against stumpy.stump itself (stumpy from PyPI, for this test only).

Same layout, class interface and element types; profiles within 1e-8 on random walks,
constant stretches and missing values (conftest.assert_distances: squared distances
within 1e-8, and distances within 1e-8 wherever they exceed 0.01; test_batch.py says why
tiny distances at m = 3 keep fewer digits). An index may differ from STUMPY's only where
two neighbours are equally near (squared distances within 1e-8): STUMPY's choice among
ties depends on its threads, tsmine takes the smaller index (tsmine/_stumpy.py says how
the conventions map). Skipped, visibly, where stumpy cannot be imported.
"""

import math

import numpy as np
import pytest
from conftest import assert_distances, pair_d2, random_walk

import tsmine

try:
    import stumpy
except ImportError as e:  # not installed, or broken (numba against this numpy)
    pytest.skip(f"stumpy cannot be imported ({e}; pip install stumpy)", allow_module_level=True)

# STUMPY's own warnings on these inputs (a large m, a zero spread it divides by) are not
# what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

TOL = 1e-8


def check_index(T, m, i, mine, theirs, what):
    """Both -1, or the same index, or two neighbours at the same distance from i."""
    assert (mine == -1) == (theirs == -1), f"{what}[{i}]: {mine} against stumpy's {theirs}"
    if mine != theirs:
        dm, dt = pair_d2(T, m, i, mine), pair_d2(T, m, i, theirs)
        assert abs(dm - dt) <= TOL, f"{what}[{i}]: {mine} at d2 {dm}, stumpy's {theirs} at {dt}"


def compare(T, m):
    want = stumpy.stump(T, m)
    got = tsmine.stump(T, m)
    # layout, class interface and element types
    assert type(got).__name__ == "mparray"
    assert got.shape == want.shape and got.dtype == want.dtype == object
    assert [type(x) for x in got[0]] == [type(x) for x in want[0]]
    for name in ("P_", "I_", "left_I_", "right_I_"):
        assert getattr(got, name).dtype == getattr(want, name).dtype
        assert getattr(got, name).shape == getattr(want, name).shape
    # the profile, then every index
    assert_distances(got.P_, want.P_)
    Tc = np.asarray(T, dtype=np.float64)
    excl = math.ceil(m / 4) + 1
    for col, name in ((1, "I"), (2, "left_I"), (3, "right_I")):
        g, w = got[:, col].astype(np.int64), want[:, col].astype(np.int64)
        for i in np.flatnonzero(g != w):
            check_index(Tc, m, i, g[i], w[i], name)
        ok = g >= 0
        # the side and the exclusion zone of every index (STUMPY's |i - j| > ceil(m/4))
        i = np.flatnonzero(ok)
        assert (np.abs(g[ok] - i) >= excl).all()
        if name == "left_I":
            assert (g[ok] < i).all()
        if name == "right_I":
            assert (g[ok] > i).all()
    return got, want


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("m", [3, 10, 50])
def test_random_walk(seed, m):
    compare(random_walk(2000, seed), m)


def test_constant_stretches():
    T = random_walk(2000, 4)
    T[300:420] = 1.5
    T[1000:1050] = -2.0
    T[1500:1700] = 0.0
    got, _ = compare(T, 30)
    assert got.P_[320] == 0.0


def test_missing_values():
    T = random_walk(2000, 5)
    T[200:260] = np.nan
    T[900] = np.inf
    T[1400:1402] = -np.inf
    got, want = compare(T, 25)
    assert np.isinf(got.P_[210]) and got.I_[210] == -1  # STUMPY's inf, not tsmine's nan
    assert np.isinf(want.P_[210])


def test_constant_and_missing_together():
    T = random_walk(1500, 6)
    T[100:200] = 4.0
    T[150:160] = np.nan  # splits the constant stretch
    T[700:800] = np.sin(np.arange(100))
    compare(T, 12)


def test_short_series_and_wide_exclusion():
    compare(random_walk(60, 7), 40)  # ceil(40/4) + 1 > some distances: -1 where none
    compare(random_walk(20, 8), 20)  # one subsequence


def test_unsupported_options():
    T = random_walk(100, 9)
    for kw in ({"T_B": T}, {"ignore_trivial": False}, {"normalize": False}, {"k": 2},
               {"T_A_subseq_isconstant": np.zeros(91, bool)}):
        with pytest.raises(NotImplementedError):
            tsmine.stump(T, 10, **kw)
    with pytest.raises(ValueError):
        tsmine.stump(T, 2)  # as STUMPY, a ValueError (tsmine.InvalidArgumentError)
