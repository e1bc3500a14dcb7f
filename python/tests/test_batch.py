# SPDX-License-Identifier: Apache-2.0
"""The batch API against a brute-force reference written from DESIGN 3, against the
`tsmine` command on the bundled NAB feeds, and its errors and conversions.

Tolerances (conftest.assert_distances): against the reference, which z-normalises every
subsequence before the dot products, squared distances within 1e-8 and distances within
1e-8 wherever they exceed 0.01. The kernels' formula, d2 = 2m (1 - (QT - m mu mu) /
(m sigma sigma)) (DESIGN 3), loses digits when both sigmas are small against the means:
at m = 3 on a random walk, 2e-9 in d2, so that a distance of 1e-6 may come out as 3e-6,
while at m >= 10 every distance is within 4e-11. An index may differ from the
reference's only between neighbours equally near to that tolerance. Against the command
(the same kernels): 1e-12 relative, indices exactly.
"""

import json
import subprocess
import threading
import time

import numpy as np
import pytest
from conftest import assert_distances, nab, random_walk

import tsmine



def reference(T, m, excl, left=False):
    """nn (or lnn) of every subsequence by brute force, from DESIGN 3's definitions:
    z-normalised distance, constants (max == min) at 0 from each other and sqrt(m)
    from the rest, non-finite subsequences excluded (nan, -1), none eligible (inf, -1),
    ties to the smaller index."""
    T = np.asarray(T, dtype=np.float64)
    W = np.lib.stride_tricks.sliding_window_view(T, m)
    N = W.shape[0]
    finite = np.isfinite(W).all(axis=1)
    Wf = np.where(finite[:, None], W, 0.0)
    const = finite & (Wf.max(axis=1) == Wf.min(axis=1))
    normal = finite & ~const
    Z = np.zeros_like(Wf)
    mu, sd = Wf.mean(axis=1), Wf.std(axis=1)
    Z[normal] = (Wf[normal] - mu[normal, None]) / sd[normal, None]
    C = np.clip(Z @ Z.T / m, -1.0, 1.0)
    D2 = 2.0 * m * (1.0 - C)
    D2[np.ix_(const, const)] = 0.0
    D2[np.ix_(const, normal)] = m
    D2[np.ix_(normal, const)] = m
    i, j = np.indices((N, N))
    eligible = (j <= i - excl) if left else (np.abs(i - j) >= excl)
    eligible &= finite[None, :] & finite[:, None]
    D2 = np.where(eligible, D2, np.inf)
    idx = np.argmin(D2, axis=1)  # the first minimum: the smaller index
    d = np.sqrt(D2[np.arange(N), idx])
    idx = np.where(np.isfinite(d), idx, -1)
    d[~finite] = np.nan
    return d, idx, D2


def greedy_discords(nn, k, excl):
    order = sorted((i for i in range(len(nn)) if np.isfinite(nn[i])), key=lambda i: (-nn[i], i))
    chosen = []
    for i in order:
        if all(abs(i - c) >= excl for c in chosen):
            chosen.append(i)
        if len(chosen) == k:
            break
    return chosen


def greedy_motifs(T, m, k, excl):
    W = np.lib.stride_tricks.sliding_window_view(np.asarray(T, float), m)
    Z = (W - W.mean(axis=1)[:, None]) / W.std(axis=1)[:, None]
    D = np.sqrt(np.maximum(2.0 * m * (1.0 - np.clip(Z @ Z.T / m, -1, 1)), 0.0))
    N = len(D)
    pairs = sorted((D[a, b], a, b) for a in range(N) for b in range(a + excl, N))
    chosen = []
    for dist, a, b in pairs:
        if all(abs(x - y) >= excl for x in (a, b) for _, p, q in chosen for y in (p, q)):
            chosen.append((dist, a, b))
        if len(chosen) == k:
            break
    return chosen


def assert_profile(p, ref):
    d, j = p
    rd, rj, D2 = ref
    assert_distances(d, rd)
    for i in np.flatnonzero(j != rj):  # only between equally near neighbours
        assert j[i] >= 0 and rj[i] >= 0, f"[{i}]: {j[i]} against the reference's {rj[i]}"
        assert abs(D2[i, j[i]] - D2[i, rj[i]]) <= 1e-8


# ---- the profile against the reference ----------------------------------------------

@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("m,excl", [(3, 3), (16, 16), (16, 4), (40, 40)])
def test_profile_random_walk(seed, m, excl):
    T = random_walk(400, seed)
    assert_profile(tsmine.profile(T, m, excl=excl, backend="cpu"), reference(T, m, excl))
    assert_profile(
        tsmine.profile(T, m, excl=excl, left=True, backend="cpu"), reference(T, m, excl, left=True)
    )


def test_profile_constant_and_missing_stretches():
    T = random_walk(500, 7)
    T[100:160] = 3.0  # a constant stretch: constants among themselves at 0
    T[300:330] = np.nan  # missing values: excluded
    T[400] = np.inf
    m = 20
    for left in (False, True):
        p = tsmine.profile(T, m, left=left, backend="cpu")
        assert_profile(p, reference(T, m, m, left=left))
    d, j = tsmine.profile(T, m, backend="cpu")
    assert np.isnan(d[290]) and j[290] == -1  # holds T[300]
    assert d[110] == 0.0  # constant, with another constant at least m away
    assert not np.isin(j, np.arange(281, 330)).any()  # nobody's neighbour


def test_profile_edges():
    T = random_walk(10, 4)
    d, j = tsmine.profile(T, 10)  # n == m: one subsequence, no neighbour
    assert d.tolist() == [np.inf] and j.tolist() == [-1]
    d, j = tsmine.profile(np.full(50, np.nan), 5)
    assert np.isnan(d).all() and (j == -1).all()
    p = tsmine.profile(T, 3)
    assert (p.m, p.excl, p.backend) == (3, 3, "cpu") or p.backend == "cuda"


# ---- discords, range discords and motifs against the reference ----------------------

@pytest.mark.parametrize("seed", [5, 6])
def test_discords_topk(seed):
    T = random_walk(600, seed)
    m, k = 24, 4
    nn, nb, _ = reference(T, m, m)
    top = tsmine.discords(T, m, k=k)
    assert top.dtype == tsmine.DISCORD_DTYPE
    assert top["index"].tolist() == greedy_discords(nn, k, m)
    assert_distances(top["distance"], nn[top["index"]])
    assert top["neighbor"].tolist() == nb[top["index"]].tolist()


def test_discords_fewer_than_k():
    T = random_walk(100, 8)
    top = tsmine.discords(T, 20, k=50)  # 81 subsequences hold at most a few non-overlapping
    assert 1 <= len(top) < 50
    assert len(tsmine.discords(np.full(100, np.nan), 20)) == 0


def test_range_discords():
    T = random_walk(600, 9)
    m = 24
    nn, nb, _ = reference(T, m, m)
    r = float(np.quantile(nn, 0.9))
    r = float(np.nextafter(r, 0)) if np.isclose(nn, r, rtol=0, atol=1e-9).sum() > 1 else r
    found = tsmine.range_discords(T, m, r)
    want = np.flatnonzero(nn >= r)
    assert found["index"].tolist() == want.tolist()
    assert_distances(found["distance"], nn[want])
    assert found["neighbor"].tolist() == nb[want].tolist()


@pytest.mark.parametrize("seed", [10, 11])
def test_motifs_topk(seed):
    T = random_walk(300, seed)
    m, k = 16, 3
    got = tsmine.motifs(T, m, k=k)
    want = greedy_motifs(T, m, k, m)
    assert got.dtype == tsmine.MOTIF_DTYPE
    assert [(int(a), int(b)) for a, b in zip(got["a"], got["b"])] == [(a, b) for _, a, b in want]
    assert_distances(got["distance"], np.array([d for d, _, _ in want]))
    # MK finds the same pairs; its references' seed changes the work, never the pairs
    for again in (
        tsmine.motifs(T, m, k=k, method="mk"),
        tsmine.motifs(T, m, k=k, method="mk", seed=12345, refs=4),
    ):
        assert again["a"].tolist() == got["a"].tolist()
        assert again["b"].tolist() == got["b"].tolist()
    with pytest.raises(ValueError, match="method"):
        tsmine.motifs(T, m, method="brute")


def test_motifs_auto_takes_mk_on_exact_repeats():
    # a spike train: many pairs tie at distance 0, which the scan and MK rank by their
    # own roundings; "auto" answers MK's pairs there, and the scan's on a random walk
    T = np.zeros(4000)
    T[7::100] = 5.0
    mk = tsmine.motifs(T, 100, k=3, excl=25, method="mk")
    auto = tsmine.motifs(T, 100, k=3, excl=25)
    assert auto.tolist() == mk.tolist()
    W = random_walk(2000, 3)
    assert tsmine.motifs(W, 32, k=2).tolist() == tsmine.motifs(W, 32, k=2, method="scan").tolist()


# ---- m="auto" and the results against the `tsmine` command -----------------------------

def run_cli(cli, *args):
    proc = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.parametrize(
    "name", ["art_daily_jumpsup.csv", "machine_temperature_system_failure.csv", "nyc_taxi.csv"]
)
def test_same_as_cli(cli, data_dir, name):
    T = nab(name)
    rows, err = run_cli(cli, "discord", "-m", "auto", "-k", 3, "--backend", "cpu", data_dir / name)
    top = tsmine.discords(T, "auto", k=3, backend="cpu")
    assert f"m = {top.m} " in err  # "tsmine: discord: -m auto: m = 48 (period 48)"
    assert top.m == tsmine.auto_m(T)[0]
    assert top["index"].tolist() == [r["index"] for r in rows]
    assert top["neighbor"].tolist() == [r["neighbor"] for r in rows]
    np.testing.assert_allclose(top["distance"], [r["distance"] for r in rows], rtol=1e-12)

    rows, _ = run_cli(cli, "motif", "-m", top.m, "-k", 2, "--backend", "cpu", data_dir / name)
    got = tsmine.motifs(T, top.m, k=2, backend="cpu")
    assert [(r["a"], r["b"]) for r in rows] == list(zip(got["a"].tolist(), got["b"].tolist()))
    np.testing.assert_allclose(got["distance"], [r["distance"] for r in rows], rtol=1e-12)


def test_profile_same_as_cli(cli, data_dir, tmp_path):
    name = "nyc_taxi.csv"
    out = tmp_path / "p.npy"
    subprocess.run(
        [cli, "profile", "-m", "48", "--left", "--backend", "cpu", "--format", "npy", "-o", out,
         data_dir / name], check=True, capture_output=True)
    d, j = tsmine.profile(nab(name), 48, left=True, backend="cpu")
    np.testing.assert_allclose(d, np.load(out), rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(j, np.load(tmp_path / "p.neighbor.npy"))


# ---- errors: the library's messages, Python's exception classes ------------------------

@pytest.mark.parametrize(
    "call,cls,text",
    [
        (lambda T: tsmine.profile(T, 2), tsmine.InvalidArgumentError, "m = 2 is too short"),
        (lambda T: tsmine.profile(T, 101), tsmine.InvalidArgumentError, "longer than the series"),
        (lambda T: tsmine.profile(T, 10, excl=0), tsmine.InvalidArgumentError, "at least 1"),
        (lambda T: tsmine.discords(T, 10, k=0), tsmine.InvalidArgumentError, "k must be at least 1"),
        (lambda T: tsmine.motifs(T, 10, k=0), tsmine.InvalidArgumentError, "k"),
        (lambda T: tsmine.range_discords(T, 10, -1.0), tsmine.InvalidArgumentError, "r"),
        (lambda T: tsmine.profile(T[:20], "auto"), tsmine.InvalidArgumentError, "too few"),
        (lambda T: tsmine.profile(T, 10, backend="gpu"), ValueError, "unknown backend 'gpu'"),
        (lambda T: tsmine.profile(T, "long"), ValueError, "'auto'"),
        (lambda T: tsmine.profile(T, 10.0), TypeError, "m must be an integer"),
        (lambda T: tsmine.profile(T, True), TypeError, "m must be an integer"),
        (lambda T: tsmine.profile(T, 10, excl=-1), ValueError, "excl must not be negative"),
        (lambda T: tsmine.discords(T, 10, k=-1), ValueError, "k must not be negative"),
        (lambda T: tsmine.profile(T, 10, threads=-2), ValueError, "threads must not be negative"),
        (lambda T: tsmine.profile(T.astype(complex), 10), TypeError, "real numbers"),
        (lambda T: tsmine.profile(T.astype(str), 10), TypeError, "real numbers"),
        (lambda T: tsmine.profile(["x", 1.0, 2.0] * 10, 3), TypeError, "real numbers"),
        (lambda T: tsmine.profile(T.reshape(10, 10), 3), ValueError, "one-dimensional"),
    ],
)
def test_errors(call, cls, text):
    T = random_walk(100, 12)
    with pytest.raises(cls) as e:
        call(T)
    assert text in str(e.value)
    if cls is tsmine.InvalidArgumentError:
        assert isinstance(e.value, ValueError) and isinstance(e.value, tsmine.Error)


def test_backend_unavailable():
    info = tsmine.backends()
    assert info["auto"] in ("cpu", "cuda")
    if info["auto"] == "cuda":
        pytest.skip("a CUDA device is present: backend='cuda' is available")
    T = random_walk(100, 13)
    with pytest.raises(tsmine.BackendError, match="backend cuda is unavailable: "):
        tsmine.profile(T, 10, backend="cuda")
    with pytest.raises(tsmine.BackendError):
        tsmine.gpu_stump(T, 10)
    assert tsmine.profile(T, 10).backend == "cpu"  # auto falls back, and says why:
    assert info["why"]


def test_conversions():
    T = random_walk(200, 14)
    want = tsmine.profile(T, 10)
    as_list = tsmine.profile(T.tolist(), 10)
    np.testing.assert_array_equal(as_list.distance, want.distance)
    ints = np.round(T * 100).astype(np.int32)
    np.testing.assert_array_equal(
        tsmine.profile(ints, 10).distance, tsmine.profile(ints.astype(np.float64), 10).distance
    )
    f32 = T.astype(np.float32)
    np.testing.assert_array_equal(
        tsmine.profile(f32, 10).distance, tsmine.profile(f32.astype(np.float64), 10).distance
    )
    strided = np.repeat(T, 2)[::2]  # not contiguous: copied
    np.testing.assert_array_equal(tsmine.profile(strided, 10).distance, want.distance)
    objects = np.array(T.tolist(), dtype=object)
    np.testing.assert_array_equal(tsmine.profile(objects, 10).distance, want.distance)
    d, j = tsmine.profile(T, np.int64(10), excl=np.int32(10))  # numpy integers as m, excl
    np.testing.assert_array_equal(d, want.distance)
    gappy = T.tolist()
    gappy[50] = None  # None in a list or object array: missing, as nan
    with_none = tsmine.profile(gappy, 10)
    T[50] = np.nan
    np.testing.assert_array_equal(with_none.distance, tsmine.profile(T, 10).distance)


# ---- the GIL is released while a kernel runs ---------------------------------------

def test_gil_released_and_threads():
    T = random_walk(1 << 14, 15)
    marks = {}

    def work():
        marks["start"] = time.perf_counter()
        marks["result"] = tsmine.profile(T, 64, threads=1)
        marks["end"] = time.perf_counter()

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
    t.join()
    # the main thread ran Python code while the worker was inside the kernel
    assert any(marks["start"] < x < marks["end"] for x in ticks)

    # several threads at once: each call has its own ctx, the results are the serial ones
    series = [random_walk(2000, s) for s in range(4)]
    want = [tsmine.profile(s, 32) for s in series]
    got = [None] * 4

    def one(i):
        got[i] = tsmine.profile(series[i], 32)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.distance, w.distance)
        np.testing.assert_array_equal(g.neighbor, w.neighbor)
