#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""checkpoint_test.py - checkpoints that suit flash (issue 18 item 6), through the real
daemon: only what changed is written, and "checkpoint now".

    checkpoint_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  idle     40 streams, periodic checkpoints off (checkpoint_interval = 0): SIGUSR1
           writes the checkpoint (one file per group of streams, read back by
           crash_test.py's independent parser); with nothing changed, SIGUSR1 and a
           CHECKPOINT request write nothing (every file's mtime and size stay); new
           samples of one stream make `tsmine checkpoint` rewrite that stream's group
           alone; a deleted stream leaves the checkpoint. Then a restart with
           checkpoint_interval = 1 restores every stream and, idle, writes nothing in
           3 s (3 periodic checkpoints counted, no file touched).

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import contextlib
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crash_test  # noqa: E402  (the independent reader of the checkpoint format)
import harness  # noqa: E402
from harness import Failure, check, wait_until  # noqa: E402

SEED = int(os.environ.get("TSM_TEST_SEED", "20261127"))
PARAMS = {"window": 512, "subsequence": 32, "hop": 128, "range": float("nan")}
STREAMS = ["flash/%d" % i for i in range(40)]


def files(state_dir):
    """{name: (mtime_ns, size)} of every file in the state directory."""
    out = {}
    for n in os.listdir(state_dir):
        st = os.stat(os.path.join(state_dir, n))
        out[n] = (st.st_mtime_ns, st.st_size)
    return out


def counter(d, name):
    return d.status()["counters"][name]


def settle(d):
    """Waits until a CHECKPOINT writes nothing: the samples accepted have been processed
    and the passes they were due have run (each changes a stream's saved state)."""
    pb = d.env.pb

    def quiet():
        r = d.request(pb.ControlRequest.CHECKPOINT, timeout_ms=10000)
        check(r.ok, "CHECKPOINT: %s" % r.error)
        return "0 streams changed" in r.message
    wait_until(quiet, 20, "a checkpoint with nothing changed", step=0.2)


@contextlib.contextmanager
def running(d):
    try:
        yield d
    except Failure:
        d.dump_log()
        raise
    finally:
        d.kill()


def case_idle(env):
    rng = random.Random(SEED)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    pb = env.pb
    with running(d):
        d.start()
        sock = env.pusher(d.ingest)
        want = {}
        for s in STREAMS:
            n = rng.randrange(300, 700)
            env.send_series(sock, s, [rng.gauss(0, 1) for _ in range(n)], batch=100)
            want[s] = n
        d.wait_samples(want)
        d.signal(signal.SIGUSR1)
        wait_until(lambda: crash_test.read_checkpoint(d.state_dir) == want, 10,
                   "SIGUSR1's checkpoint of every stream")
        groups = len(crash_test.group_files(d.state_dir))
        check(groups == len({crash_test.group_of(s) for s in STREAMS}),
              "%d files for the groups of %d streams" % (groups, len(STREAMS)))
        wait_until(lambda: counter(d, "checkpoints") >= 1, 5, "it is counted")

        # nothing changed: nothing written, whatever asks
        settle(d)
        before, done = files(d.state_dir), counter(d, "checkpoints")
        time.sleep(1.0)
        d.signal(signal.SIGUSR1)
        wait_until(lambda: counter(d, "checkpoints") > done, 5,
                   "SIGUSR1's idle checkpoint")
        r = d.request(pb.ControlRequest.CHECKPOINT)
        check(r.ok and "0 streams changed" in r.message, "CHECKPOINT: %s %s" % (r.error,
                                                                                r.message))
        check(files(d.state_dir) == before, "an idle checkpoint touched files: %s -> %s"
              % (before, files(d.state_dir)))

        # one stream changes: its group's file alone is rewritten, by `tsmine checkpoint`
        s = STREAMS[7]
        env.send_series(sock, s, [rng.gauss(0, 1) for _ in range(50)], batch=50,
                        first_seq=want[s])
        want[s] += 50
        d.wait_samples(want)
        time.sleep(0.5 * harness.SLOW)  # processed (a tick), its pass run
        out = env.tsmine_run("checkpoint", "--endpoint", d.control).stdout
        check("1 streams changed" in out, "tsmine checkpoint printed %r" % out)
        after = files(d.state_dir)
        name = "streams-%02x.ckpt" % crash_test.group_of(s)
        changed = sorted(n for n in after if after[n] != before.get(n))
        check(changed == [name], "files rewritten for one stream: %s (its group: %s)"
              % (changed, name))
        check(crash_test.read_checkpoint(d.state_dir) == want, "the files hold %s"
              % crash_test.read_checkpoint(d.state_dir))

        # a deleted stream leaves the checkpoint
        gone = STREAMS[3]
        r = d.request(pb.ControlRequest.DELETE_STREAM, gone)
        check(r.ok, "DELETE_STREAM: %s" % r.error)
        r = d.request(pb.ControlRequest.CHECKPOINT)
        check(r.ok, "CHECKPOINT: %s" % r.error)
        del want[gone]
        check(crash_test.read_checkpoint(d.state_dir) == want, "after a delete the files "
              "hold %s" % crash_test.read_checkpoint(d.state_dir))
        sock.close()
        settle(d)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")

        # periodic checkpoints of an idle daemon restored from them write nothing
        d.limits["checkpoint_interval"] = 1
        before = files(d.state_dir)
        d.start()
        check(crash_test.restore_outcome(d) == "restored", "restart: %s"
              % crash_test.restore_outcome(d))
        st = d.status()["streams"]
        check({k: v["next_seq"] for k, v in st.items()} == want, "restored %s" % st)
        done = counter(d, "checkpoints")
        time.sleep(3.0)
        ran = counter(d, "checkpoints") - done
        check(ran >= 2, "%d periodic checkpoints in 3 s at checkpoint_interval = 1" % ran)
        check(files(d.state_dir) == before, "idle periodic checkpoints touched files")
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        check(files(d.state_dir) == before, "an idle SIGTERM touched files")
    print("# %d streams in %d group files; idle: SIGUSR1, CHECKPOINT, %d periodic "
          "checkpoints and SIGTERM wrote nothing; one changed stream rewrote 1 file"
          % (len(STREAMS), groups, ran))


CASES = {"idle": case_idle}


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES, SEED))
