#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""alert_log_test.py - the alert log sink (daemon/sink/sink_alert_log.c) through the real
daemon: one JSON line per alert appended to alert_log.path, reopened at SIGHUP.

Each feed is batches of 32 samples of one stream with a jump in sequence numbers
before the next: one GAP alert per jump, whatever the detection parameters.

Cases:
  lines   the GAP alert arrives in the file as one JSON line (kind, stream, alert_id,
          seq, the sequence numbers of the gap), STATUS counts it (alert_log_lines = 1,
          no drops, no errors), and a clean stop leaves the file as it was.
  reopen  logrotate's way: the file is renamed and tsmined gets SIGHUP; the next alert
          goes to a new file at the path, the renamed one keeps only the first.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import json
import os
import signal
import sys

import harness
from harness import check, wait_until


def send(env, d, stream, seqs):
    """Sends 32 samples at each of seqs."""
    sock = env.pusher(d.ingest)
    try:
        for at in seqs:
            sock.send(env.batch(stream, at, [float(k % 7) for k in range(32)]))
    finally:
        sock.close()


def lines_of(path, n):
    """The JSON lines of path once it has n (waits for them), parsed."""
    def ready():
        if not os.path.exists(path):
            return None
        with open(path) as f:
            text = f.read()
        return text.count("\n") >= n and text
    text = wait_until(ready, 20 * harness.SLOW, "%d lines in %s" % (n, path))
    check(text.endswith("\n"), "a partial line in %s: %r" % (path, text[-80:]))
    return [json.loads(line) for line in text.splitlines()]


def check_gap(a, stream, alert_id, start):
    check(a["kind"] == "GAP" and a["stream_id"] == stream and a["alert_id"] == alert_id,
          "not the GAP alert %d of %s: %s" % (alert_id, stream, a))
    check(a["start_seq"] == start, "the GAP starts at %s, not %d" % (a["start_seq"], start))


def first_gap(env, d, path, stream):
    """Feeds the first GAP of stream; returns the file's lines once it is there, alone."""
    send(env, d, stream, [0, 100])
    got = lines_of(path, 1)
    check(len(got) == 1, "%d lines for one alert" % len(got))
    check_gap(got[0], stream, 1, 32)
    return got


def case_lines(env):
    path = os.path.join(env.dir, "alerts.jsonl")
    d = env.daemon(groups={"alert_log": {"path": path}})
    with d:
        got = first_gap(env, d, path, "log/a")
        check(got[0]["seq"] == 1, "seq %s" % got[0]["seq"])
        c = d.status()["counters"]
        check((c["alert_log_lines"], c["alert_log_drops"], c["alert_log_errors"]) == (1, 0, 0),
              "counters lines %d, drops %d, errors %d" % (c["alert_log_lines"],
                                                          c["alert_log_drops"],
                                                          c["alert_log_errors"]))
        check(d.stop() == 0, "tsmined did not exit 0")
    check(lines_of(path, 1) == got, "the file changed at the stop")


def case_reopen(env):
    path = os.path.join(env.dir, "alerts.jsonl")
    d = env.daemon(groups={"alert_log": {"path": path}})
    with d:
        first = first_gap(env, d, path, "log/b")
        os.rename(path, path + ".1")
        d.signal(signal.SIGHUP)
        # the reload has run once STATUS counts it (the reopen is ordered before any
        # alert queued after it)
        wait_until(lambda: d.status()["counters"]["reloads"] == 1, 20 * harness.SLOW,
                   "the reload")
        send(env, d, "log/b", [1000])
        second = lines_of(path, 1)
        check(len(second) == 1, "%d lines in the new file" % len(second))
        check_gap(second[0], "log/b", 2, 132)
        check(lines_of(path + ".1", 1) == first, "the renamed file changed")
        check(d.status()["counters"]["alert_log_lines"] == 2, "alert_log_lines is not 2")


CASES = {"lines": case_lines, "reopen": case_reopen}

if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES))
