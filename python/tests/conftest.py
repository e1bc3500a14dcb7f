# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of the Python package's tests, and the exit status ctest reads.

ctest (tests/CMakeLists.txt) runs these tests with the Python of the venv the package
was installed into. TSMINE_CLI, when set, is the `tsmine` program of the same checkout,
which the cross-checks compare with. A run whose every test was skipped (stumpy not
installed, no CLI) exits 77 after a "SKIP:" line with the reasons, which ctest reports
as skipped rather than passed.
"""

import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture
def data_dir():
    return DATA


@pytest.fixture
def cli():
    path = os.environ.get("TSMINE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tsmine program to compare with (TSMINE_CLI unset)")
    return path


def random_walk(n, seed):
    """A random walk of n steps: the usual test series of matrix profile work."""
    return np.cumsum(np.random.default_rng(seed).normal(size=n))


def assert_distances(d, r, tol=1e-8):
    """Distances d against reference distances r: the same ones undefined (nan, inf),
    squared distances within tol, and distances within tol wherever r > 0.01 (below, the
    kernels' correlation formula limits the digits: test_batch.py says how)."""
    d, r = np.asarray(d, dtype=np.float64), np.asarray(r, dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(d), np.isnan(r))
    np.testing.assert_array_equal(np.isinf(d), np.isinf(r))
    ok = np.isfinite(r)
    np.testing.assert_allclose(d[ok] ** 2, r[ok] ** 2, rtol=0, atol=tol)
    far = ok & (r > 0.01)
    np.testing.assert_allclose(d[far], r[far], rtol=0, atol=tol)


def pair_d2(T, m, i, j):
    """DESIGN 3's squared distance between subsequences i and j of T (both finite),
    computed directly from the z-normalised subsequences."""
    a, b = T[i : i + m], T[j : j + m]
    ca, cb = a.max() == a.min(), b.max() == b.min()
    if ca and cb:
        return 0.0
    if ca or cb:
        return float(m)
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    return float((za - zb) @ (za - zb))


def nab(name):
    """The values of a bundled NAB feed (timestamp,value rows)."""
    return np.genfromtxt(DATA / name, delimiter=",", skip_header=1, usecols=1)


def pytest_sessionfinish(session, exitstatus):
    """Exit 77 when tests were skipped and none ran (ctest: SKIP_RETURN_CODE)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter else {}
    if stats.get("skipped") and not any(stats.get(k) for k in ("passed", "failed", "error")):
        reasons = set()
        for r in stats["skipped"]:
            reasons.add(r.longrepr[-1] if isinstance(r.longrepr, tuple) else str(r.longrepr))
        print(f"\nSKIP: {'; '.join(sorted(reasons))}")
        session.exitstatus = 77
