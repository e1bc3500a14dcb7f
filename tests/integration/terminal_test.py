#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""terminal_test.py - what a person sees (issue 32): `tsmine alerts` and `tsmine status`
run on a pseudo-terminal (their standard output a tty, as in a person's shell) against a
real tsmined on loopback, checked against an independent ZeroMQ + protobuf subscriber.

    terminal_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  alerts_tty   two streams (ids of different lengths, the longer first) of a noisy sine
               with a planted burst, one with a gap and a restart (a newer epoch), sent
               with 1 s between samples from 2023-11-14T22:13:20Z; `tsmine alerts` (UTC)
               and `tsmine alerts --local` (TZ=EST5) on terminals print one line per
               alert the reference subscriber got, in its order: the ISO 8601 time of the
               alert's first sample, the stream, the kind, the score, words; no raw
               timestamp (no run of 12 or more digits); every column starting at the same
               place on every line; an event's extent as #A..#B with its length in
               samples and, once the stream's period is known, in time; GAP and RESET
               lines in words. Piped, `tsmine alerts` prints JSON lines as before.
  status_tty   the same feeds and a rejected batch: `tsmine status` on a terminal prints
               a table, one row per stream, most alerts first, its numbers those of the
               daemon and right-aligned under their headings, then the health lines
               (rejected by reason); --top 1 lists one row and counts the rest; --stream
               ID one row and no health; `tsmine counters` the health alone; piped, and
               with --format json on a terminal, the JSON object as before.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped). With
TSM_TEST_SHOW=1 in the environment, alerts_tty also prints the lines it read.
"""

import fcntl
import json
import math
import os
import pty
import random
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import harness
from harness import Failure, check, wait_until

SEED = 20261207
T0_NS = 1700000000 * 1000000000  # 2023-11-14T22:13:20Z
PERIOD_NS = 1000000000  # one sample a second
LONG, SHORT = "plant/line-1/temperature", "plant/pump"
PARAMS = {"window": 1024, "subsequence": 24, "hop": 256}


class Tty:
    """A command with its standard output on a pseudo-terminal, 300 columns wide (so
    that no line wraps), or on a pipe (tty=False), read in a thread. Its standard error
    goes to a file."""

    def __init__(self, argv, workdir, name, extra_env=None, tty=True):
        env = dict(os.environ)
        env.update(extra_env or {})
        self.err_path = os.path.join(workdir, name + ".stderr")
        self.err = open(self.err_path, "w")
        if tty:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 300, 0, 0))
        else:
            master, slave = os.pipe()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave,
                                     stderr=self.err, env=env)
        os.close(slave)
        self.master = master
        self.data = b""
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the terminal's other end closed
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    def lines(self):
        """The complete lines so far (a terminal writes \\r\\n)."""
        with self.lock:
            text = self.data.decode("utf-8", "replace")
        return [ln.rstrip("\r") for ln in text.split("\n")[:-1]]

    def wait(self, timeout=30):
        """Waits for the command to exit and its output to be read; its status."""
        rc = self.proc.wait(timeout * harness.SLOW)
        self.thread.join(timeout * harness.SLOW)
        return rc

    def stop(self):
        """SIGINT (tsmine alerts exits 0 on it), then waits; its status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.thread.join(5)
        os.close(self.master)
        self.err.close()

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()


def run_tty(env, name, *args):
    """A one-shot tsmine command on a terminal: (status, lines, standard error)."""
    t = Tty([env.tsmine] + [str(a) for a in args], env.dir, name)
    try:
        rc = t.wait()
        return rc, t.lines(), t.stderr()
    finally:
        t.close()


def noisy_sine(rng, n, period, noise):
    return [math.sin(2 * math.pi * k / period) + rng.gauss(0, noise) for k in range(n)]


def batch(env, stream, first_seq, values, epoch=0, t0=T0_NS):
    b = env.pb.SampleBatch(schema_version=1, stream_id=stream, first_seq=first_seq,
                           first_timestamp_ns=t0 + first_seq * PERIOD_NS, period_ns=PERIOD_NS,
                           values=values, epoch=epoch)
    return b.SerializeToString()


def send(env, sock, stream, values, first_seq=0, epoch=0, t0=T0_NS, size=128):
    for i in range(0, len(values), size):
        sock.send(batch(env, stream, first_seq + i, values[i:i + size], epoch, t0))


# The probe stream of subscribe_all: an id longer than the feeds', so that the readable
# lines' stream column is as wide from the first line on as it will be.
SYNC = "zz/subscriptions-in-place"


def gap_starts(t, tty):
    """The start_seq of every GAP of stream SYNC a subscriber printed."""
    if tty:
        return set(int(m.group(1)) for ln in t.lines() for m in [re.search(
            r"  %s +GAP .*samples #(\d+)\.\." % re.escape(SYNC), ln)] if m)
    return set(a["start_seq"] for a in map(json.loads, t.lines())
               if a["stream_id"] == SYNC and a["kind"] == "GAP")


def subscribe_all(env, sock, sub, procs):
    """Sends GAPs on stream SYNC until every subscriber (procs: (Tty, on a terminal))
    and the reference one show one (ZeroMQ subscriptions take effect a moment after the
    connection): returns the start_seq of the first GAP all of them got, from which on
    they all see the same alerts."""
    seq = [0]

    def seen():
        sock.send(batch(env, SYNC, seq[0], [0.0, 1.0, 0.0, 1.0]))
        seq[0] += 8  # each batch after the first leaves four samples out: a GAP
        starts = [gap_starts(t, tty) for t, tty in procs]
        starts.append(set(a.start_seq for s, a in sub.get() if s == SYNC and a.kind == env.pb.GAP))
        common = set.intersection(*starts)
        return min(common) if common else None

    return wait_until(seen, 30, "every subscriber to see a GAP of stream " + SYNC, step=0.1)


def from_gap(t, tty, s0):
    """A subscriber's lines from the one of SYNC's GAP at s0 on."""
    lines = t.lines()
    for i, ln in enumerate(lines):
        if (re.search(r"  %s +GAP .*#%d\.\." % (re.escape(SYNC), s0), ln) if tty else
                '"stream_id":"%s","kind":"GAP","start_seq":%d,' % (SYNC, s0) in ln):
            return lines[i:]
    return []


def feed(env, d, sock, rng):
    """The two streams: each a noisy sine (period 24) with a burst planted at 1200; the
    short one then loses 40 samples (a GAP) and restarts at sequence 0 with epoch 1 (a
    RESET). The long one first, its alerts published before the short one's."""
    for stream in (LONG, SHORT):
        values = noisy_sine(rng, 2000, 24, 0.2)
        for k in range(1200, 1224):
            values[k] += rng.gauss(0, 1.5)
        send(env, sock, stream, values)
        d.wait_samples({stream: 2000})
    send(env, sock, SHORT, noisy_sine(rng, 200, 24, 0.2), first_seq=2040)
    d.wait_samples({SHORT: 2200})
    send(env, sock, SHORT, noisy_sine(rng, 400, 24, 0.2), epoch=1, t0=T0_NS + 3000 * PERIOD_NS)
    d.wait_samples({SHORT: 2600})


def settle(d, sub, streams):
    """Waits until the daemon processed everything and the reference subscriber holds
    every alert it counted for the streams."""
    def done():
        full = d.status()
        st = full["streams"]
        got = sub.get()
        return full["counters"]["pending_samples"] == 0 and full["counters"][
            "pending_passes"] == 0 and all(
            st[s]["alerts"] == sum(1 for x, _ in got if x == s) for s in streams)
    wait_until(done, 60, "every alert to reach the subscriber", step=0.1)


def iso(ns, offset_h=0):
    """The ISO 8601 text tsmine prints for a timestamp, UTC or at a fixed offset."""
    s, rem = divmod(ns, 1000000000)
    tm = time.gmtime(s + offset_h * 3600)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", tm) + ".%03d" % (rem // 1000000)
    return text + ("Z" if offset_h == 0 else "%+03d:00" % offset_h)


def duration(s):
    """alert_text.c's tsm_duration_text, for whole and fractional seconds."""
    if s < 9.95:
        return "%.2g s" % s
    if s < 59.5:
        return "%.0f s" % s
    v = round(s)
    if s < 3599.5:
        return "%d min %d s" % divmod(v, 60) if v % 60 else "%d min" % (v // 60)
    v = round(s / 60)
    return "%d h %d min" % divmod(v, 60) if v % 60 else "%d h" % (v // 60)


def check_lines(env, lines, alerts, offset_h, what):
    """The readable lines against the reference alerts, one for one."""
    pb = env.pb
    check(len(lines) == len(alerts), "%s: %d lines for %d alerts:\n%s" % (
        what, len(lines), len(alerts), "\n".join(lines[-5:])))
    kind_at, score_at, what_at = set(), set(), set()
    anchor, known = {}, set()  # alert_text.c's learning of each stream's period
    for ln, (stream, a) in zip(lines, alerts):
        kind = pb.AlertKind.Name(a.kind)
        where = "%s: line %r (alert %s)" % (what, ln, str(a).replace("\n", " "))
        stamped = kind != "RESET" or a.start_timestamp_ns != 0  # a RESET carries no time
        if kind == "RESET":
            anchor.pop(stream, None)  # the next stamped alert anchors the period again
        if stamped and stream not in anchor:
            anchor[stream] = a.start_seq
        elif stamped and a.start_seq != anchor[stream]:
            known.add(stream)
        when = iso(a.start_timestamp_ns, offset_h) if stamped else "-".ljust(
            24 if offset_h == 0 else 29)
        check(ln.startswith(when + "  " + stream + " "),
              "%s: does not start with the time of its first sample and the stream" % where)
        check(not re.search(r"\d{12,}", ln), "%s: a raw timestamp" % where)
        k = ln.index("  " + kind + " ") + 2
        kind_at.add(k)
        score_at.add(k + 14)
        what_at.add(k + 28)
        score = ln[k + 14:k + 26]
        scored = kind in ("ANOMALY", "ANOMALY_END", "DISCORD", "LEFT_DISCORD")
        check(score == ("score %.4f" % a.score if scored else " " * 12),
              "%s: score column %r" % (where, score))
        words = ln[k + 28:]
        if kind == "ANOMALY":
            want = "event opens at #%d..#%d (m %d)" % (a.start_seq, a.start_seq + a.length - 1,
                                                       a.length)
        elif kind == "ANOMALY_END":
            n = a.event_end_seq - a.event_start_seq
            want = "event closed: #%d..#%d, %d samples" % (a.event_start_seq,
                                                            a.event_end_seq - 1, n)
            if stream in known:
                want += ", " + duration(n * PERIOD_NS / 1e9)
            want += "; peak at #%d" % a.start_seq
        elif kind == "GAP":
            want = "samples #%d..#%d never arrived (%d samples" % (
                a.start_seq, a.start_seq + a.length - 1, a.length)
            if stream in known:
                want += ", " + duration(a.length * PERIOD_NS / 1e9)
        elif kind == "RESET":
            want = "the stream starts over at #%d (it had reached #%d)" % (a.start_seq,
                                                                         a.neighbor_seq)
        else:
            want = ""
        check(words.startswith(want), "%s: the words do not start with %r" % (where, want))
        # a scored alert ends with its views (alert_text.c views()), the others carry none
        if scored:
            check(a.view != 0, "%s: a scored alert without its view" % where)
            shown = ["%s %.4f" % (n, getattr(a, n + "_score"))
                     for n in ("shape", "magnitude", "level")
                     if not math.isnan(getattr(a, n + "_score"))]
            tail = "; view " + pb.View.Name(a.view).lower() + (
                " (" + ", ".join(shown) + ")" if shown else "")
            check(words.endswith(tail), "%s: the words do not end with %r" % (where, tail))
        else:
            check("; view" not in words, "%s: views on an alert without them" % where)
    for name, at in (("kind", kind_at), ("score", score_at), ("words", what_at)):
        check(len(at) == 1, "%s: the %s column starts at %s" % (what, name, sorted(at)))


# ---- cases ------------------------------------------------------------------------------

def case_alerts_tty(env):
    rng = random.Random(SEED)
    with env.daemon(params=PARAMS) as d, harness.Subscriber(env, d.alerts) as sub:
        procs = [(Tty([env.tsmine, "alerts", "--endpoint", d.alerts], env.dir, "utc"), True),
                 (Tty([env.tsmine, "alerts", "--local", "--endpoint", d.alerts], env.dir,
                      "local", {"TZ": "EST5"}), True),
                 (Tty([env.tsmine, "alerts", "--endpoint", d.alerts], env.dir, "piped",
                      tty=False), False)]
        try:
            sock = env.pusher(d.ingest)
            s0 = subscribe_all(env, sock, sub, procs)
            feed(env, d, sock, rng)
            settle(d, sub, [LONG, SHORT])
            got = sub.get()
            start = next(i for i, (s, a) in enumerate(got)
                         if s == SYNC and a.kind == env.pb.GAP and a.start_seq == s0)
            ref = got[start:]
            for t, tty in procs:
                wait_until(lambda: len(from_gap(t, tty, s0)) >= len(ref), 30,
                           "every alert on %s" % t.err_path)
            sock.close()
            rcs = [t.stop() for t, _ in procs]
            lines = [from_gap(t, tty, s0) for t, tty in procs]
        finally:
            for t, _ in procs:
                t.close()
    check(rcs == [0, 0, 0], "tsmine alerts exited %s: %s" % (rcs, procs[0][0].stderr()))
    kinds = set(env.pb.AlertKind.Name(a.kind) for _, a in ref)
    check({"ANOMALY", "ANOMALY_END", "GAP", "RESET"} <= kinds,
          "the feeds raised %s, not every kind this test reads" % sorted(kinds))
    if os.environ.get("TSM_TEST_SHOW"):
        print("\n".join("# " + ln for ln in lines[0] + lines[1][:2]))
    check_lines(env, lines[0], ref, 0, "UTC")
    check_lines(env, lines[1], ref, -5, "--local, TZ=EST5")
    rows = [json.loads(ln) for ln in lines[2]]
    check(len(rows) == len(ref) and all(
        r["stream_id"] == s and r["start_timestamp_ns"] == a.start_timestamp_ns and
        r["kind"] == env.pb.AlertKind.Name(a.kind) for r, (s, a) in zip(rows, ref)),
        "piped, tsmine alerts prints %d JSON lines for %d alerts" % (len(rows), len(ref)))
    print("# %d alerts of kinds %s: one readable line each, in UTC and EST; piped, JSON" % (
        len(ref), ", ".join(sorted(kinds))))


def columns_of(header):
    """The headings of the status table and where each ends (numbers align right)."""
    return {m.group(0): (m.start(), m.end())
            for m in re.finditer(r"LAST SCORE|[A-Z]+", header)}


def case_status_tty(env):
    rng = random.Random(SEED + 1)
    with env.daemon(params=PARAMS) as d:
        sock = env.pusher(d.ingest)
        feed(env, d, sock, rng)
        sock.send(batch(env, "plant/bad", 0, [1.0, float("nan"), 2.0]))
        wait_until(lambda: d.status()["rejected"].get("nonfinite") == 1, 30,
                   "the batch with a NaN to be rejected")
        sock.close()

        def quiet():  # nothing left to process: no alert comes between the two looks
            c = d.status()["counters"]
            return c["pending_samples"] == 0 and c["pending_passes"] == 0
        wait_until(quiet, 60, "the daemon to process every sample and pass", step=0.1)
        full = d.status()
        st = full["streams"]
        rc, lines, err = run_tty(env, "status", "status", "--endpoint", d.control)
        check(rc == 0, "tsmine status on a terminal: exit %d: %s" % (rc, err))
        text = "\n".join(lines)
        check(not re.search(r"\d{12,}", text) and not text.lstrip().startswith("{"),
              "tsmine status on a terminal prints no table:\n" + text)
        cols = columns_of(lines[0])
        check(list(cols) == ["STREAM", "SAMPLES", "ALERTS", "EVENT", "M", "CALIBRATED",
                             "LAST SCORE", "IDLE"], "the table's headings: %r" % lines[0])
        rows = lines[1:1 + len(st)]
        order = sorted(st, key=lambda s: (-st[s]["alerts"], -st[s]["samples"], s))
        for row, stream in zip(rows, order):
            s = st[stream]
            check(row.startswith(stream + " "), "row %r is not stream %s (most alerts first)"
                  % (row, stream))
            for head, value in (("SAMPLES", s["samples"]), ("ALERTS", s["alerts"]),
                                ("M", s["subsequence"] or "-")):
                end = cols[head][1]
                cell = row[:end].rsplit(" ", 1)[-1]
                check(cell == str(value) and row[end:end + 2] == "  ",
                      "row %r: %s is not %s ending under its heading" % (row, head, value))
            at = cols["CALIBRATED"][0]
            check(row[at:].split()[0] == ("yes" if s["calibrated"] else "no"),
                  "row %r: CALIBRATED" % row)
        health = {ln.split()[0]: ln for ln in lines[len(st) + 2:]}
        check("nonfinite 1" in health.get("rejected", ""), "the health lines say no rejected "
              "batch: %s" % lines[len(st) + 2:])
        for key in ("samples", "alerts", "drops", "memory", "checkpoints"):
            check(key in health, "no health line %r: %s" % (key, lines[len(st) + 2:]))
        check(str(full["counters"]["samples"]) + " accepted" in health.get("samples", ""),
              "samples line: %r" % health.get("samples"))

        rc, top, _ = run_tty(env, "top", "status", "--endpoint", d.control, "--top", "1")
        rest = sum(st[s]["alerts"] for s in order[1:])
        check(rc == 0 and top[1].startswith(order[0] + " ") and
              top[2] == "... and %d more streams with %d alerts (--top 0 lists all)" % (
                  len(order) - 1, rest), "--top 1:\n" + "\n".join(top[:3]))
        rc, one, _ = run_tty(env, "one", "status", "--endpoint", d.control, "--stream", SHORT)
        check(rc == 0 and len(one) == 2 and one[1].startswith(SHORT + " "),
              "--stream %s on a terminal:\n%s" % (SHORT, "\n".join(one)))
        rc, cnt, _ = run_tty(env, "counters", "counters", "--endpoint", d.control)
        check(rc == 0 and cnt[0].startswith("tsmined ") and "STREAM" not in "\n".join(cnt),
              "tsmine counters on a terminal:\n" + "\n".join(cnt))
        rc, js, _ = run_tty(env, "json", "status", "--endpoint", d.control, "--format", "json")
        piped = env.tsmine_run("status", "--endpoint", d.control).stdout
        for what, out in (("--format json on a terminal", "\n".join(js)), ("piped", piped)):
            try:
                doc = json.loads(out)
            except ValueError:
                raise Failure("tsmine status %s prints no JSON object: %r" % (what, out[:200]))
            check(set(doc["streams"]) == set(st) and all(
                doc["streams"][s]["samples"] == st[s]["samples"] for s in st),
                "tsmine status %s: the streams differ" % what)
    print("# %d streams in the table, most alerts first; --top, --stream, counters, JSON" %
          len(st))


CASES = {f.__name__[5:]: f for f in (case_alerts_tty, case_status_tty)}


def main():
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
