# SPDX-License-Identifier: Apache-2.0
"""The package's CUDA backend against its CPU backend (DESIGN 2): the same discord sets and
motif pairs, profiles and distances within 1e-9 relative, tsmine.gpu_stump's columns as
tsmine.stump's. Skipped, visibly, where the package has no CUDA backend or no GPU is
present (exit 77 under ctest)."""

import numpy as np
import pytest
from conftest import nab, pair_d2, random_walk

import tsmine

if tsmine.backends()["auto"] != "cuda":
    pytest.skip(f"no CUDA backend here: {tsmine.backends()['why']}", allow_module_level=True)

REL = 1e-9


def series():
    T = random_walk(20000, 21)
    T[3000:3200] = 1.0  # constant
    T[9000:9050] = np.nan  # missing
    return {"walk": random_walk(20000, 20), "gappy": T, "nyc_taxi": nab("nyc_taxi.csv")}


def same_neighbors(T, m, got, want):
    """Indices equal, or (ties) two neighbours at the same squared distance to 1e-8."""
    T = np.asarray(T, dtype=np.float64)
    for i in np.flatnonzero(got != want):
        assert got[i] >= 0 and want[i] >= 0, f"[{i}]: {got[i]} against {want[i]}"
        assert abs(pair_d2(T, m, i, got[i]) - pair_d2(T, m, i, want[i])) <= 1e-8


def close(a, b):
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
    ok = np.isfinite(a)
    np.testing.assert_allclose(a[ok], b[ok], rtol=REL, atol=1e-12)


@pytest.mark.parametrize("name", ["walk", "gappy", "nyc_taxi"])
def test_profile(name):
    T = series()[name]
    for left in (False, True):
        g = tsmine.profile(T, 64, left=left, backend="cuda")
        c = tsmine.profile(T, 64, left=left, backend="cpu")
        assert g.backend == "cuda" and c.backend == "cpu"
        close(g.distance, c.distance)
        same_neighbors(T, 64, g.neighbor, c.neighbor)


@pytest.mark.parametrize("name", ["walk", "gappy", "nyc_taxi"])
def test_discords_motifs(name):
    T = series()[name]
    g, c = tsmine.discords(T, 64, k=5, backend="cuda"), tsmine.discords(T, 64, k=5, backend="cpu")
    assert g["index"].tolist() == c["index"].tolist()
    close(g["distance"], c["distance"])
    # just below the fifth discord's distance, so that it is in on both backends (their
    # distances agree within REL, not bit for bit: at r itself it may fall either side)
    r = float(c["distance"][-1]) * (1 - REL)
    g, c = (tsmine.range_discords(T, 64, r, backend=b) for b in ("cuda", "cpu"))
    assert g["index"].tolist() == c["index"].tolist()
    for method in ("scan", "mk"):
        g, c = (tsmine.motifs(T, 64, k=3, method=method, backend=b) for b in ("cuda", "cpu"))
        assert g[["a", "b"]].tolist() == c[["a", "b"]].tolist()
        close(g["distance"], c["distance"])


def test_gpu_stump():
    T = series()["gappy"]
    g, c = tsmine.gpu_stump(T, 50), tsmine.stump(T, 50)
    assert g.shape == c.shape and g.dtype == c.dtype
    close(g.P_, c.P_)
    for name in ("I_", "left_I_", "right_I_"):
        same_neighbors(T, 50, getattr(g, name), getattr(c, name))
