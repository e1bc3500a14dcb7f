#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmarks of the Python package; one JSON object per line (DESIGN 7).

  python bench/bench.py overhead --cli BUILD/tools/tsmine [--log2 12 16 20] [--m 100]
      tsmine.profile against `tsmine profile` on the same random walk (a .f64 file for
      the command): the command's own compute time (statistics and kernel, its -v
      lines), its wall time (process start, read, profile, .npy written) and the Python
      call's wall time (conversion, statistics, kernel, result arrays). overhead is the
      call's time over the command's compute time, less 1.
  python bench/bench.py stump [--log2 14 16] [--m 100]
      tsmine.stump against stumpy.stump (installed separately; compiled by a first call
      that is not timed) on a random walk: both times and the largest difference of
      their profiles.

  python bench/bench.py stumpi [--history 2000 20000] [--updates 2000] [--m 100]
      tsmine.stumpi against stumpy.stumpi (installed separately; compiled by first calls
      that are not timed), egress on and off: updates per second, each side starting
      from the same history of a random walk and taking the same next values of it (the
      initial profile is not timed), and the largest difference of their profiles
      (P_ and left_P_) after the updates.

  python bench/bench.py lag [--history 2000] [--updates 2000] [--m 100]
      the lag of each profile, tsmine.stumpi and stumpy.stumpi side by side (egress
      off): after each update, the newest subsequence's left_P_ and P_ as they stand,
      against their values once every update is in. left_P_ is final when the
      subsequence completes (lag 0 updates); P_ also looks right, so it keeps changing
      while later subsequences come: how many updates until it stops (median, 90th
      percentile, max) and the share that were final at once; with the wall time of all
      the updates.

  python bench/bench.py gpu [--log2 17] [--m 100]
      tsmine.gpu_stump against tsmine.stump (the CPU backend) and, where stumpy runs on
      the GPU (numba's CUDA), stumpy.gpu_stump: times after an untimed first call (the
      device's start) and the largest difference from the CPU profile.

Each size runs --repeat times (default 5; 1 from 2^20 on), the order of the two sides
alternating, and reports the medians, on the CPU backend with OpenMP's and Numba's
default threads.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tsmine


def walk(n, seed=0):
    return np.cumsum(np.random.default_rng(seed).normal(size=n))


def repeats(args, n):
    if args.repeat is not None:
        return args.repeat
    return 5 if n < (1 << 20) else 1


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def overhead(args):
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.log2:
            n = 1 << k
            T = walk(n)
            path = os.path.join(tmp, "series.f64")
            T.astype("<f8").tofile(path)
            out = os.path.join(tmp, "p.npy")
            kern, wall, py = [], [], []
            cmd = [args.cli, "profile", "-m", str(args.m), "--backend", "cpu", "-v", "-q",
                   "--format", "npy", "-o", out, path]
            for r in range(repeats(args, n)):
                if r % 2:  # every other repeat, Python first: no side gains from the order
                    dt, p = timed(lambda: tsmine.profile(T, args.m, backend="cpu"))
                    py.append(dt)
                dt, proc = timed(lambda: subprocess.run(cmd, capture_output=True, text=True, check=True))
                wall.append(dt)
                kern.append(float(re.search(r"statistics ([0-9.]+) s", proc.stderr).group(1)) +
                            float(re.search(r"profile: kernel ([0-9.]+) s", proc.stderr).group(1)))
                if r % 2 == 0:
                    dt, p = timed(lambda: tsmine.profile(T, args.m, backend="cpu"))
                    py.append(dt)
            np.testing.assert_array_equal(p.distance, np.load(out))  # the same profile
            k_med, py_med = statistics.median(kern), statistics.median(py)
            print(json.dumps({
                "bench": "python_profile", "backend": "cpu", "n": n, "m": args.m,
                "seconds": round(py_med, 6), "cli_compute_seconds": round(k_med, 6),
                "cli_wall_seconds": round(statistics.median(wall), 6),
                "overhead": round(py_med / k_med - 1, 4), "repeat": len(py),
            }), flush=True)


def stump(args):
    import stumpy

    stumpy.stump(walk(1000), args.m)  # Numba compiles here, untimed
    for k in args.log2:
        n = 1 << k
        T = walk(n)
        ts, ss = [], []
        for _ in range(repeats(args, n)):
            dt, mine = timed(lambda: tsmine.stump(T, args.m))
            ts.append(dt)
            dt, theirs = timed(lambda: stumpy.stump(T, args.m))
            ss.append(dt)
        diff = float(np.max(np.abs(mine.P_ - theirs.P_)))
        t_med, s_med = statistics.median(ts), statistics.median(ss)
        print(json.dumps({
            "bench": "python_stump", "backend": "cpu", "n": n, "m": args.m,
            "seconds": round(t_med, 6), "stumpy_seconds": round(s_med, 6),
            "speedup": round(s_med / t_med, 2), "max_abs_diff": diff,
            "same_index": float(np.mean(mine.I_ == theirs.I_)), "repeat": len(ts),
        }), flush=True)


def stumpi(args):
    import stumpy

    for egress in (True, False):  # Numba compiles both paths here, untimed
        stumpy.stumpi(walk(64), 8, egress=egress).update(0.5)
    for n in args.history:
        T = walk(n + args.updates, seed=1)
        for egress in (True, False):
            times = {"tsmine": [], "stumpy": []}
            for r in range(args.repeat or 3):
                sides = [("tsmine", tsmine.stumpi), ("stumpy", stumpy.stumpi)]
                for name, cls in sides[::-1] if r % 2 else sides:  # alternate the order
                    obj = cls(T[:n], args.m, egress=egress)
                    dt, _ = timed(lambda: [obj.update(t) for t in T[n:]])
                    times[name].append(dt)
                    if name == "tsmine":
                        mine = obj
                    else:
                        theirs = obj
            diff = 0.0
            for attr in ("P_", "left_P_"):
                a, b = getattr(mine, attr), getattr(theirs, attr)
                ok = np.isfinite(b)
                diff = max(diff, float(np.max(np.abs(a[ok] - b[ok]))))
            t_med, s_med = statistics.median(times["tsmine"]), statistics.median(times["stumpy"])
            print(json.dumps({
                "bench": "python_stumpi", "backend": "cpu", "n": n, "m": args.m,
                "egress": egress, "updates": args.updates, "seconds": round(t_med, 6),
                "updates_per_s": round(args.updates / t_med, 1),
                "stumpy_seconds": round(s_med, 6),
                "stumpy_updates_per_s": round(args.updates / s_med, 1),
                "speedup": round(s_med / t_med, 2), "max_abs_diff": diff,
                "same_index": float(np.mean(mine.I_ == theirs.I_)),
                "repeat": len(times["tsmine"]),
            }), flush=True)


def lag(args):
    import stumpy

    stumpy.stumpi(walk(64), 8, egress=False).update(0.5)  # Numba compiles, untimed
    n = args.history[0]
    T = walk(n + args.updates, seed=2)
    for name, cls in (("tsmine", tsmine.stumpi), ("stumpy", stumpy.stumpi)):
        obj = cls(T[:n], args.m, egress=False)
        first = len(obj.P_)  # the index of the first subsequence an update completes
        left_at, full_at = [], []
        born = np.full(first + args.updates, -1)
        changed = np.full(first + args.updates, -1)  # the last update that moved P_[i]
        prev = obj.P_.copy()
        seconds = 0.0
        for k, t in enumerate(T[n:]):
            dt, _ = timed(lambda: obj.update(t))
            seconds += dt
            P = obj.P_
            j = len(P) - 1
            born[j] = changed[j] = k
            left_at.append(obj.left_P_[j])
            full_at.append(P[j])
            moved = np.flatnonzero(P[:j] != prev[:j])
            changed[moved] = k
            prev = P.copy()
        new = np.arange(first, first + args.updates)
        lags = changed[new] - born[new]
        print(json.dumps({
            "bench": "python_stumpi_lag", "backend": "cpu", "side": name, "n": n,
            "m": args.m, "updates": args.updates, "seconds": round(seconds, 6),
            "left_final_at_update": float(np.mean(np.asarray(left_at) == obj.left_P_[new])),
            "full_final_at_update": float(np.mean(np.asarray(full_at) == obj.P_[new])),
            "full_lag_updates_median": float(np.median(lags)),
            "full_lag_updates_p90": float(np.percentile(lags, 90)),
            "full_lag_updates_max": int(lags.max()),
        }), flush=True)


def gpu(args):
    try:
        import stumpy

        stumpy.gpu_stump(walk(1000), args.m)
    except Exception as e:  # not installed, or no numba CUDA: tsmine alone
        print(f"bench: stumpy.gpu_stump not measured: {e}", file=sys.stderr)
        stumpy = None
    tsmine.gpu_stump(walk(1000), args.m)  # the device's start, untimed
    for k in args.log2:
        n = 1 << k
        T = walk(n)
        gs, cs, ss = [], [], []
        for _ in range(repeats(args, n)):
            dt, mine = timed(lambda: tsmine.gpu_stump(T, args.m))
            gs.append(dt)
            dt, cpu = timed(lambda: tsmine.stump(T, args.m))
            cs.append(dt)
            if stumpy:
                dt, theirs = timed(lambda: stumpy.gpu_stump(T, args.m))
                ss.append(dt)
        line = {
            "bench": "python_gpu_stump", "backend": "cuda", "n": n, "m": args.m,
            "seconds": round(statistics.median(gs), 6),
            "cpu_seconds": round(statistics.median(cs), 6),
            "max_abs_diff_cpu": float(np.max(np.abs(mine.P_ - cpu.P_))),
            "same_index_cpu": float(np.mean(mine.I_ == cpu.I_)), "repeat": len(gs),
        }
        if stumpy:
            line["stumpy_seconds"] = round(statistics.median(ss), 6)
            line["max_abs_diff_stumpy"] = float(np.max(np.abs(mine.P_ - theirs.P_)))
        print(json.dumps(line), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--cli", required=True, help="the tsmine program")
    o.add_argument("--log2", type=int, nargs="+", default=[12, 16, 20])
    s = sub.add_parser("stump")
    s.add_argument("--log2", type=int, nargs="+", default=[14, 16])
    g = sub.add_parser("gpu")
    g.add_argument("--log2", type=int, nargs="+", default=[17])
    i = sub.add_parser("stumpi")
    i.add_argument("--history", type=int, nargs="+", default=[2000, 20000],
                   help="values of the initial history (default 2000 20000)")
    i.add_argument("--updates", type=int, default=2000, help="updates timed (default 2000)")
    lg = sub.add_parser("lag")
    lg.add_argument("--history", type=int, nargs=1, default=[2000],
                    help="values of the initial history (default 2000)")
    lg.add_argument("--updates", type=int, default=2000, help="updates (default 2000)")
    for p in (o, s, g, i, lg):
        p.add_argument("--m", type=int, default=100)
        p.add_argument("--repeat", type=int, help="runs of each size (default 5; 1 from 2^20 on; "
                                                  "stumpi: 3)")
    args = ap.parse_args()
    {"overhead": overhead, "stump": stump, "gpu": gpu, "stumpi": stumpi,
     "lag": lag}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
