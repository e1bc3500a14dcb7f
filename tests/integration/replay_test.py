#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""replay_test.py - `tsmine replay` across a restart of tsmined (issue 27 item 4): a
sender that loses nothing, through the real daemon and the real tool; and the
timestamps it sends (issue 34 item 3): a file's own, or at its spacing from now.

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
  kill_time  kill with a NAB-style CSV ("timestamp,value", 2014, not evenly spaced)
             replayed with its own timestamps (the default): every alert, of the
             daemon before the kill and of the one after, carries the timestamp its
             first sample has in the file, and the restarted daemon raises alerts on
             samples the replay sent again (so they came with the same timestamps).

Timestamps (no restart; every alert's start_timestamp_ns, as a subscriber gets it):
  file_time  a NAB feed (tests/data, evenly spaced) and a NAB-style walk that is not,
             with a missing value: each alert carries the timestamp of its first sample
             in the file (a GAP the missing row's), and `tsmine alerts` prints the
             data's date (2014-04-...).
  now_time   the walk with `--timestamps now`: each alert's timestamp minus its first
             sample's offset in the file is one instant, between the replay's start and
             its end.
Backwards and repeated timestamps are refused before anything is sent (tests/cli_test.sh).

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import calendar
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Failure, check, wait_until  # noqa: E402

SEED = int(os.environ.get("TSM_TEST_SEED", "20261207"))
KILL_AFTER = 4000  # samples accepted after the checkpoint before SIGKILL
STREAM = "replay/restart"
PROBE = STREAM + "/probe"  # kill_time: a GAP of it says the subscriber hears the new daemon
# (rows, samples a second (None: as fast as the daemon takes them), batch, parameters)
PACED = (60000, 20000, 100, {"window": 512, "subsequence": 32, "hop": 128,
                             "range": float("nan")})
# Under a wrapper (valgrind, TSan: harness.SLOW) or ASan (harness.SLOWER) the daemon lags
# anyway: a shorter flood.
FLOOD = (int(400000 // harness.SLOWER) // 256 * 256, None, 256,
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


def write_timed(path, rng, rows, missing=()):
    """A random walk as NAB writes its feeds: "timestamp,value" rows, "YYYY-MM-DD
    HH:MM:SS" in UTC from 2014-04-01, one second apart but 7 s before rows 950, 1950,
    ... (inside a batch of 100: it goes out with one timestamp per sample); a row of
    missing has no value. Returns every row's timestamp in ns."""
    t0 = calendar.timegm((2014, 4, 1, 0, 0, 0))
    x, ts, lines = 0.0, [], ["timestamp,value"]
    for k in range(rows):
        x += rng.gauss(0.0, 1.0)
        t = t0 + k + 6 * ((k + 50) // 1000)
        ts.append(t * 10**9)
        lines.append("%s,%s" % (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)),
                                "" if k in missing else repr(x)))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return ts


def nab_times(path):
    """The timestamps of a NAB feed's rows, in ns."""
    with open(path) as f:
        rows = [r.split(",")[0] for r in f.read().split("\n")[1:] if r]
    return [calendar.timegm(time.strptime(r, "%Y-%m-%d %H:%M:%S")) * 10**9 for r in rows]


def timed_alerts(alerts, ts, offset=0, where=""):
    """Checks that every alert with a timestamp carries the one of its first sample,
    ts[start_seq] + offset; returns how many do."""
    n = 0
    for a in alerts:
        if a.start_timestamp_ns == 0:  # none (a RESET; a sample no longer in the window)
            continue
        check(a.start_seq < len(ts), "%s: an alert at #%d of %d rows" % (where, a.start_seq,
                                                                        len(ts)))
        want = ts[a.start_seq] + offset
        check(a.start_timestamp_ns == want,
              "%s: alert %s at #%d has timestamp %d, the file's is %d (%+d ns)"
              % (where, a.kind, a.start_seq, a.start_timestamp_ns, want,
                 a.start_timestamp_ns - want))
        n += 1
    return n


def wait_heard(env, d, probe_id, heard, what):
    """Sends batches of stream probe_id to d, 10 sequence numbers apart (from the second
    on, each makes a GAP alert), until heard() says that a subscriber got one of them: it
    then hears d, and gets every alert d publishes from then on."""
    sock, first = env.pusher(d.ingest), [0]

    def sent_and_heard():
        sock.send(env.batch(probe_id, first[0], [0.0]))
        first[0] += 10
        return heard()
    wait_until(sent_and_heard, 30, what)
    sock.close()


def samples(d):
    """The stream's accepted samples (0 before it exists); None while nobody answers."""
    st = d.status(timeout_ms=1000, fail=False)
    if st is None:
        return None
    return st["streams"].get(STREAM, {}).get("samples", 0)


def wait_samples(d, n):
    return wait_until(lambda: (samples(d) or 0) >= n and samples(d), 30 * harness.SLOWER,
                      "stream %s to hold %d samples" % (STREAM, n))


def run_case(env, name, how, feed=PACED, resume=True, timed=False):
    rows, rate, batch, params = feed
    rng = random.Random(SEED)
    if timed:  # the file's own timestamps (the default with a timestamp column)
        path = os.path.join(env.dir, "walk.csv")
        ts = write_timed(path, rng, rows)
        stamps = []
    else:  # 1 ms between timestamps: the flood's last one is within limits.max_time_ahead
        path = os.path.join(env.dir, "walk.f64")
        write_series(path, rng, rows)
        stamps = ["--period-ns", "1000000"]
    d = env.daemon(params=params, limits=LIMITS)
    with d, harness.Subscriber(env, d.alerts, STREAM) as sub:
        cmd = [env.tsmine, "replay", "--endpoint", d.ingest, "--control", d.control,
               "--stream", STREAM, "--batch", str(batch), *stamps,
               "--timeout-ms", str(int(60000 * harness.SLOW)), "-v", path]
        if rate:  # slower under a wrapper or ASan: the restart must come mid-replay
            cmd[2:2] = ["--rate", str(int(rate / harness.SLOWER))]
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
                if timed:
                    replay.send_signal(signal.SIGSTOP)  # until the subscriber hears the next
                d.kill()
                killed_ns = time.time_ns()  # alerts detected later are the next daemon's
            if replay.poll() is not None:
                raise Failure("the replay ended before the restart: %s" % replay.communicate()[1])
            d.start()
            if timed:
                # The replay sends again at once, before the subscriber has connected to
                # the new daemon (what it publishes before then is lost to it): the replay
                # goes on once the subscriber got an alert of a probe stream from it.
                wait_heard(env, d, PROBE, lambda: any(sid == PROBE for sid, _ in sub.get()),
                           "the subscriber to hear the restarted daemon")
                replay.send_signal(signal.SIGCONT)
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
        gaps = [a for sid, a in sub.get() if sid == STREAM and a.kind == env.pb.GAP]
        counted_gaps = st["alerts_by_kind"].get("GAP", 0) - \
            st["streams"].get(PROBE, {}).get("gaps", 0)
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
        if timed:
            # the samples sent again: from the restored next_seq, `again` of them
            got = re.search(r"it has the stream up to (\d+): sending from there", err)
            check(got, "tsmine replay -v did not say where it resumed: %s" % err.strip())
            lo = int(got.group(1))

            def resent():
                return [a for sid, a in sub.get() if sid == STREAM and a.start_timestamp_ns and
                        a.detected_at_ns > killed_ns and lo <= a.start_seq < lo + again]
            wait_until(resent, 30, "an alert of the restarted daemon on a "
                       "sample sent again (else the test is void)")
            n = timed_alerts([a for sid, a in sub.get() if sid == STREAM], ts, where=name)
            print("# %s: %d alerts carry their file timestamps, %d of the restarted daemon on "
                  "samples sent again" % (name, n, len(resent())))
    return 0


def case_file_time(env):
    nab = os.path.join(env.data, "art_daily_jumpsup.csv")
    walk = os.path.join(env.dir, "walk.csv")
    feeds = {"time/nab": (nab, nab_times(nab)),
             "time/walk": (walk, write_timed(walk, random.Random(SEED), 6000, missing={3500}))}
    params = {"window": 512, "subsequence": 32, "hop": 128}
    with env.daemon(params=params) as d, harness.Subscriber(env, d.alerts, "time/") as sub:
        text = open(os.path.join(env.dir, "alerts.txt"), "w")
        tool = subprocess.Popen([env.tsmine, "alerts", "--endpoint", d.alerts, "--stream",
                                 "time/nab", "--format", "text"], stdout=text,
                                stderr=subprocess.PIPE, text=True)

        def printed(sid):  # the lines of `tsmine alerts` for stream sid (its 2nd column)
            with open(text.name) as f:
                return [x for x in f if x.split()[1:2] == [sid]]
        try:
            wait_heard(env, d, "time/nab/probe", lambda: printed("time/nab/probe"),
                       "`tsmine alerts` to hear the daemon")
            for sid, (path, _) in feeds.items():
                env.tsmine_run("replay", "--endpoint", d.ingest, "--control", d.control,
                               "--stream", sid, "--batch", 100, path)

            def seen():
                got = sub.get()
                return all(any(s == sid and a.start_timestamp_ns for s, a in got)
                           for sid in feeds) and \
                    any(a.kind == env.pb.GAP for s, a in got if s == "time/walk")
            wait_until(seen, 30, "alerts of both streams and the walk's GAP")

            lines = wait_until(lambda: printed("time/nab"), 30,
                               "a line of `tsmine alerts` for time/nab")
        finally:
            tool.terminate()
            tool.communicate(timeout=10)
            text.close()
        check(lines[0].startswith("2014-04-"), "`tsmine alerts` prints the date of the "
              "replay, not the data's (2014-04-01 to 2014-04-14): %s" % lines[0].strip())
        got = sub.get()
        for sid, (_, ts) in feeds.items():
            n = timed_alerts([a for s, a in got if s == sid], ts, where=sid)
            print("# %s: %d alerts carry the timestamps of the file" % (sid, n))
        gap = [a for s, a in got if s == "time/walk" and a.kind == env.pb.GAP][0]
        check(gap.start_seq == 3500 and gap.start_timestamp_ns == feeds["time/walk"][1][3500],
              "the GAP of the missing row 3500: %s" % gap)
        print("# tsmine alerts: %s" % lines[0].strip())
    return 0


def case_now_time(env):
    walk = os.path.join(env.dir, "walk.csv")
    ts = write_timed(walk, random.Random(SEED), 6000, missing={3500})
    params = {"window": 512, "subsequence": 32, "hop": 128}
    with env.daemon(params=params) as d, harness.Subscriber(env, d.alerts, "now/") as sub:
        before = time.time_ns()
        env.tsmine_run("replay", "--endpoint", d.ingest, "--control", d.control, "--stream",
                       "now/walk", "--batch", 100, "--timestamps", "now", walk)
        after = time.time_ns()
        wait_until(lambda: any(a.start_timestamp_ns for _, a in sub.get()), 30,
                   "an alert of now/walk")
        got = [a for _, a in sub.get()]
        first = next(a for a in got if a.start_timestamp_ns)
        start = first.start_timestamp_ns - (ts[first.start_seq] - ts[0])
        check(before <= start <= after, "--timestamps now: the first sample at %d, not between "
              "the replay's start %d and end %d" % (start, before, after))
        n = timed_alerts(got, [t - ts[0] for t in ts], offset=start, where="now/walk")
        print("# now/walk: %d alerts at the file's spacing from %.3f s after the replay began"
              % (n, (start - before) / 1e9))
    return 0


CASES = {
    "term": lambda env: run_case(env, "term", "term"),
    "term_flood": lambda env: run_case(env, "term_flood", "term", FLOOD),
    "kill": lambda env: run_case(env, "kill", "kill"),
    "kill_gap": lambda env: run_case(env, "kill_gap", "kill", resume=False),
    "kill_time": lambda env: run_case(env, "kill_time", "kill", timed=True),
    "file_time": case_file_time,
    "now_time": case_now_time,
}


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES, SEED))
