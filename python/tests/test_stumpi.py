# SPDX-License-Identifier: Apache-2.0
"""tsmine.stumpi against stumpy.stumpi itself (stumpy from PyPI, for this test only), on
the same initial series and the same updates, egress on and off: random walks, constant
stretches (in the initial series and among the updates) and missing values.

After every few updates: the same lengths and dtypes, T_ equal, P_ and left_P_ within
1e-8 (the same ones inf, squared distances within 1e-8, and distances within 1e-8
wherever they exceed 0.01, as conftest.assert_distances; where a distance differs by
more, at m = 3 after some updates, STUMPY's is the one off: its QT recurrence runs
uncentred and never starts over, so tsmine's must then be within 1e-9 of the distance
computed directly, conftest.pair_d2, and nearer to it), and every index equal to STUMPY's
unless the two name neighbours equally near (squared distances within 1e-8: STUMPY's
initial stump breaks ties by thread, tsmine takes the smaller index). Indices count from
the first value of the initial series in both, so a tie is judged on the whole series
seen. The tests of the growth and refresh paths against the batch profile need no
stumpy.
"""

import math

import numpy as np
import pytest
from conftest import assert_distances, pair_d2, random_walk

import tsmine

# STUMPY's own warnings on these inputs (a zero spread it divides by) are not tested here
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

TOL = 1e-8


@pytest.fixture(scope="module")
def stumpy():
    try:
        import stumpy
    except ImportError as e:  # not installed, or broken (numba against this numpy)
        pytest.skip(f"stumpy cannot be imported ({e}; pip install stumpy)")
    return stumpy


def check_index(full, m, i, mine, theirs, what):
    """Both -1, or the same index, or two neighbours at the same distance from i (indices
    into full, the initial series and every update)."""
    assert (mine == -1) == (theirs == -1), f"{what}[{i}]: {mine} against stumpy's {theirs}"
    if mine != theirs:
        dm, dt = pair_d2(full, m, i, mine), pair_d2(full, m, i, theirs)
        assert abs(dm - dt) <= TOL, f"{what}[{i}]: {mine} at d2 {dm}, stumpy's {theirs} at {dt}"


def assert_profile(g, w, index, full, first, m):
    """Distances g (tsmine's, neighbours index) against STUMPY's w (see the top)."""
    np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
    ok = np.isfinite(w)
    np.testing.assert_allclose(g[ok] ** 2, w[ok] ** 2, rtol=0, atol=TOL)
    for k in np.flatnonzero(ok & (w > 0.01) & (np.abs(g - w) > TOL)):
        exact = math.sqrt(pair_d2(full, m, first + k, index[k]))
        assert abs(g[k] - exact) <= 1e-9 and abs(g[k] - exact) < abs(w[k] - exact), (
            f"[{k}]: {g[k]} against stumpy's {w[k]}, {exact} computed directly")


def compare(got, want, full, first, m):
    """got (tsmine.stumpi) against want (stumpy.stumpi); full: every value so far, of which
    the history starts at index first."""
    for name in ("P_", "I_", "left_P_", "left_I_", "T_"):
        g, w = getattr(got, name), getattr(want, name)
        assert g.dtype == w.dtype and g.shape == w.shape, name
    np.testing.assert_array_equal(got.T_, want.T_)
    assert_profile(got.P_, want.P_, got.I_, full, first, m)
    assert_profile(got.left_P_, want.left_P_, got.left_I_, full, first, m)
    excl = math.ceil(m / 4) + 1
    for name in ("I_", "left_I_"):
        g, w = getattr(got, name), getattr(want, name)
        for k in np.flatnonzero(g != w):
            check_index(full, m, first + k, g[k], w[k], name)
        ok = g >= 0
        i = first + np.flatnonzero(ok)
        assert (np.abs(g[ok] - i) >= excl).all(), name  # STUMPY's |i - j| > ceil(m / 4)
        if name == "left_I_":
            assert (g[ok] < i).all()


def run(stumpy, T, updates, m, egress, every=37):
    got, want = tsmine.stumpi(T, m, egress=egress), stumpy.stumpi(T, m, egress=egress)
    full = np.asarray(T, dtype=np.float64)
    compare(got, want, full, 0, m)
    for k, t in enumerate(updates, 1):
        got.update(t)
        want.update(t)
        if k % every == 0 or k == len(updates):
            full = np.concatenate((T, updates[:k]))
            compare(got, want, full, k if egress else 0, m)
    return got, want


@pytest.mark.parametrize("egress", [True, False])
@pytest.mark.parametrize("seed,m", [(1, 3), (2, 10), (3, 50)])
def test_random_walk(stumpy, seed, m, egress):
    w = random_walk(700, seed)
    run(stumpy, w[:300], w[300:], m, egress)


@pytest.mark.parametrize("egress", [True, False])
def test_constant_stretches(stumpy, egress):
    w = random_walk(800, 4)
    w[100:160] = 1.5  # in the initial series
    w[420:500] = -2.0  # among the updates, long enough for constant subsequences
    w[600:620] = w[599]  # a level the walk was at
    got, _ = run(stumpy, w[:300], w[300:], 20, egress)
    assert (got.P_[-5:] > 0).all()


@pytest.mark.parametrize("egress", [True, False])
def test_missing_values(stumpy, egress):
    w = random_walk(700, 5)
    w[50:70] = np.nan  # in the initial series
    w[350] = np.nan  # among the updates: the kernel's window is not clean for a while
    w[400:403] = np.inf
    w[500] = -np.inf
    got, want = run(stumpy, w[:300], w[300:], 16, egress, every=11)
    assert np.isinf(want.P_).any()


def test_egress_keeps_the_length_and_growth_doubles(stumpy):
    """Without egress the history outgrows its first window (2 len(T)) twice."""
    w = random_walk(1300, 6)
    got, _ = run(stumpy, w[:300], w[300:], 25, False, every=101)
    assert len(got.P_) == 1300 - 25 + 1 and got.T_.size == 1300
    got, _ = run(stumpy, w[:300], w[300:], 25, True, every=101)
    assert len(got.P_) == 300 - 25 + 1 and got.T_.size == 300


def test_long_run_against_the_batch_profile():
    """Past the kernel's exact refresh of the QT row (TSM_QT_REFRESH = 4096 updates) and
    two growths, without egress: P_ is the two-sided profile of T_, left_P_ its left
    profile (tsmine.profile, the batch kernel), with STUMPY's exclusion zone."""
    w = random_walk(6000, 7) + 1e4  # an offset: the kernel's centring at work
    m = 40
    s = tsmine.stumpi(w[:800], m, egress=False)
    for t in w[800:]:
        s.update(t)
    excl = math.ceil(m / 4) + 1
    assert_distances(s.P_, tsmine.profile(w, m, excl=excl, backend="cpu").distance)
    assert_distances(s.left_P_, tsmine.profile(w, m, excl=excl, left=True, backend="cpu").distance)


def test_left_profile_has_no_lag():
    """The profile without the lag of a window (bench.py lag): a new subsequence's
    left_P_ and left_I_ are final at the update that completes it (no later update
    moves them), while its P_ only falls as neighbours arrive on its right."""
    w = random_walk(1500, 9)
    m = 30
    s = tsmine.stumpi(w[:500], m, egress=False)
    first = len(s.P_)
    left_at, index_at, full_at = [], [], []
    for t in w[500:]:
        s.update(t)
        left_at.append(s.left_P_[-1])
        index_at.append(s.left_I_[-1])
        full_at.append(s.P_[-1])
    new = slice(first, len(s.P_))
    assert np.array_equal(np.asarray(left_at), s.left_P_[new])
    assert np.array_equal(np.asarray(index_at), s.left_I_[new])
    assert np.all(s.P_[new] <= np.asarray(full_at))
    assert np.any(s.P_[new] < np.asarray(full_at))  # the two-sided one did move


def test_arguments():
    T = random_walk(100, 8)
    for kw in ({"normalize": False}, {"k": 2}, {"mp": np.zeros((91, 4))},
               {"T_subseq_isconstant_func": lambda a, w: a}):
        with pytest.raises(NotImplementedError):
            tsmine.stumpi(T, 10, **kw)
    for m in (2, 101):
        with pytest.raises(ValueError, match="out of range"):  # as STUMPY, a ValueError
            tsmine.stumpi(T, m)
    with pytest.raises(tsmine.InvalidArgumentError, match="at least 2 m"):
        tsmine.stumpi(T[:30], 20)  # egress: the kernel's window needs 2 m
    tsmine.stumpi(T[:30], 20, egress=False).update(1.0)  # without: it grows
    with pytest.raises(TypeError):
        tsmine.stumpi(T, 10).update("x")
