#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""replay_test.py - `tsmine replay` across a restart of tsmined (issue 27 item 4): a
sender that loses nothing, through the real daemon and the real tool.

    replay_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

A file is replayed with `tsmine replay --control`; the daemon is restarted on the same
state directory and ports while the replay runs, once the stream has a quarter of the
file (its `samples` counter, polled on the control socket). Afterwards the stream must
hold every sample exactly once: `samples` and `next_seq` equal the rows, no gap (the
stream's `gaps`, the GAP alerts counted and seen by a subscriber), no batch rejected
(the stream's `rejected`, the daemon's `duplicate` and `out_of_order` counters), and
the replay exits 0 reporting one restart and how many samples it sent again.

Cases:
  term       60,000 samples at 20,000 a second; SIGTERM (as `systemctl restart` does),
             then a start: what the stopping daemon did not process is sent again from
             the restored next_seq.
  term_flood 400,000 samples (a tenth under valgrind) as fast as the daemon takes
             them (W 4096, m 128, hop 1024: it lags, and messages queue on both
             sides), then SIGTERM and a start.
  kill       as term, but a CHECKPOINT request, KILL_AFTER more samples accepted,
             SIGKILL, a start: the restored stream is back at the checkpoint, and the
             replay must send the samples accepted since again (it says how many: at
             least KILL_AFTER).
  kill_gap   the same with `--no-resume`: the replay goes on where it was, so the
             samples accepted since the checkpoint are lost and the daemon reports a
             GAP. The control experiment: the loss the other cases must not show is
             real.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import os
import random
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Failure, check, wait_until  # noqa: E402

SEED = int(os.environ.get("TSM_TEST_SEED", "20261207"))
KILL_AFTER = 4000  # samples accepted after the checkpoint before SIGKILL
STREAM = "replay/restart"
# (rows, samples a second (None: as fast as the daemon takes them), batch, parameters)
PACED = (60000, 20000, 100, {"window": 512, "subsequence": 32, "hop": 128,
                             "range": float("nan")})
# Under a wrapper (valgrind, TSan: harness.SLOW) the daemon lags anyway: a shorter flood.
FLOOD = (int(400000 // harness.SLOW) // 256 * 256, None, 256,
         {"window": 4096, "subsequence": 128, "hop": 1024})
# Periodic checkpoints off: the only ones are the CHECKPOINT request and the stop.
LIMITS = {"checkpoint_interval": 0}


def write_series(path, rng, rows):
    x, values = 0.0, []
    for _ in range(rows):
        x += rng.gauss(0.0, 1.0)
        values.append(x)
    with open(path, "wb") as f:
        f.write(struct.pack("<%dd" % rows, *values))


def samples(d):
    """The stream's accepted samples (0 before it exists); None while nobody answers."""
    st = d.status(timeout_ms=1000, fail=False)
    if st is None:
        return None
    return st["streams"].get(STREAM, {}).get("samples", 0)


def wait_samples(d, n):
    return wait_until(lambda: (samples(d) or 0) >= n and samples(d), 30,
                      "stream %s to hold %d samples" % (STREAM, n))


def run_case(env, name, how, feed=PACED, resume=True):
    rows, rate, batch, params = feed
    rng = random.Random(SEED)
    path = os.path.join(env.dir, "walk.f64")
    write_series(path, rng, rows)
    d = env.daemon(params=params, limits=LIMITS)
    with d, harness.Subscriber(env, d.alerts, STREAM) as sub:
        # 1 ms between timestamps: the flood's last one is within limits.max_time_ahead
        cmd = [env.tsmine, "replay", "--endpoint", d.ingest, "--control", d.control,
               "--stream", STREAM, "--batch", str(batch), "--period-ns", "1000000",
               "--timeout-ms", str(int(60000 * harness.SLOW)), "-v", path]
        if rate:
            cmd[2:2] = ["--rate", str(rate)]
        if not resume:
            cmd[2:2] = ["--no-resume"]
        replay = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            at = wait_samples(d, rows // 4)
            if how == "term":
                check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
            else:
                r = d.request(env.pb.ControlRequest.CHECKPOINT, timeout_ms=10000)
                check(r.ok, "CHECKPOINT: %s" % r.error)
                at = wait_samples(d, samples(d) + KILL_AFTER)  # past what it saved
                d.kill()
            if replay.poll() is not None:
                raise Failure("the replay ended before the restart: %s" % replay.communicate()[1])
            d.start()
            _, err = replay.communicate(timeout=60 * harness.SLOW)
        finally:
            if replay.poll() is None:
                replay.kill()
                replay.wait()
        check(replay.returncode == 0, "tsmine replay: exit %d: %s"
              % (replay.returncode, err.strip()))
        got = re.search(r"(\d+) restarts of the daemon, (\d+) samples sent again", err)
        check(got, "tsmine replay -v did not report its restarts: %s" % err.strip())
        restarts, again = int(got.group(1)), int(got.group(2))
        check(restarts == 1, "the replay saw %d restarts of the daemon, not 1" % restarts)

        # with --control, the replay exits once the daemon has the last batch
        if not resume:
            wait_until(lambda: d.status()["streams"][STREAM]["next_seq"] == rows, 30,
                       "the daemon to take the last batch")
        st = d.status()
        s = st["streams"][STREAM]
        gaps = [a for sid, a in sub.get() if a.kind == env.pb.GAP]
        counted_gaps = st["alerts_by_kind"].get("GAP", 0)
        rejected = {k: st["rejected"].get(k, 0) for k in ("duplicate", "out_of_order")}
        print("# %s: SIG%s at %d of %d samples accepted, the replay sent %d again; stream: "
              "samples %d, next_seq %d, gaps %d, rejected %d; GAP alerts %d counted, %d seen"
              % (name, how.upper(), at, rows, again, s["samples"], s["next_seq"], s["gaps"],
                 s["rejected"], counted_gaps, len(gaps)))
        if not resume:
            # the control experiment: without resuming, the kill loses what the daemon
            # accepted after its checkpoint, and the daemon says so with a GAP
            check(s["gaps"] >= 1 and s["samples"] < rows,
                  "--no-resume across SIGKILL lost nothing (stream %s): the test does not "
                  "produce the loss it is about" % s)
            return 0
        check(s["next_seq"] == rows and s["samples"] == rows,
              "the stream has samples %d, next_seq %d of %d rows" % (s["samples"], s["next_seq"],
                                                                      rows))
        check(s["gaps"] == 0 and counted_gaps == 0 and not gaps,
              "a GAP across the restart: stream gaps %d, GAP alerts counted %d, seen %s"
              % (s["gaps"], counted_gaps, [(a.start_seq, a.length) for a in gaps]))
        check(s["rejected"] == 0 and not any(rejected.values()),
              "batches rejected: the stream's %d, the daemon's %s" % (s["rejected"], rejected))
        if how == "kill":
            check(again >= KILL_AFTER, "the replay sent %d samples again; the checkpoint "
                  "was at least %d samples behind at the kill" % (again, KILL_AFTER))
    return 0


CASES = {
    "term": lambda env: run_case(env, "term", "term"),
    "term_flood": lambda env: run_case(env, "term_flood", "term", FLOOD),
    "kill": lambda env: run_case(env, "kill", "kill"),
    "kill_gap": lambda env: run_case(env, "kill_gap", "kill", resume=False),
}


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES, SEED))
