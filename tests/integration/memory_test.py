#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""memory_test.py - tsmined's memory stays bounded under hostile senders and slow
subscribers (issue 5 item 4), through its real interfaces:

  oversize         14 raw TCP connections speak ZMTP 3.0 as PUSH peers, announce
                   frames far beyond ZMQ_MAXMSGSIZE and stream their bodies: every one
                   is disconnected and the daemon's resident memory (VmRSS) grows by
                   less than 20 MB; a real client's samples are still counted.
  slow_subscriber  three subscribers while the daemon publishes ~1000 GAP alerts/s
                   for 60 s: one stops reading for the whole time. The daemon's VmRSS
                   stays flat (bounded by alerts.hwm); the two readers get every alert
                   (per-stream seq 1..N without a gap, N = the daemon's count); the
                   stalled one's gaps in seq equal exactly the alerts it lacks; and
                   the daemon's alert_drops (alerts that reached no subscriber) equals
                   the gaps the readers see: 0. Why the daemon cannot count the stalled
                   subscriber's own losses: daemon/README.md, "Slow subscribers".
                   TSMINE_STALL_S shortens the 60 s for local runs (CI runs 60 s).

    memory_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import os
import socket
import struct
import sys
import threading
import time

import harness
from harness import Failure, check, wait_until

import zmq

MB = 1 << 20
# The VmRSS bounds hold for a plain build. Under ASan (its quarantine keeps freed blocks,
# 256 MB by default) or a wrapper such as valgrind (shadow memory) resident memory says
# nothing about tsmined's own: the cases then check everything but the bound, and say so.
RSS_BOUNDS = not os.environ.get("ASAN_OPTIONS") and not harness.WRAPPER


def status_bytes(pid, field):
    """A size in /proc/PID/status (VmRSS, VmPeak, ...), in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise Failure("no %s for pid %d" % (field, pid))


def rss_bytes(pid):
    """Resident memory of a process (VmRSS)."""
    return status_bytes(pid, "VmRSS")


class RssSampler:
    """The largest VmRSS of pid seen every 20 ms while active (a background thread)."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop_flag = pid, 0, False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop_flag:
            try:
                self.peak = max(self.peak, rss_bytes(self.pid))
            except (OSError, Failure):  # the daemon died: close() says so
                self.peak = None
                return
            time.sleep(0.02)

    def close(self):
        self.stop_flag = True
        self.thread.join()
        check(self.peak is not None, "tsmined died during the attack")
        return self.peak


# ---- oversize ---------------------------------------------------------------------

def zmtp_push_greeting():
    """ZMTP 3.0 greeting (NULL mechanism, as client) and the READY command of a PUSH."""
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + \
        b"\x00" + b"\x00" * 31
    prop = b"\x0bSocket-Type" + struct.pack(">I", 4) + b"PUSH"
    body = b"\x05READY" + prop
    return greeting, b"\x04" + bytes([len(body)]) + body


def hostile_sender(port, announce, body_bytes, result, k):
    """Handshakes as a PUSH peer, announces one frame of `announce` bytes, then streams
    up to body_bytes of it; result[k] = True when the daemon closed the connection
    (EOF or reset) before all of it was written."""
    greeting, ready = zmtp_push_greeting()
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    try:
        s.sendall(greeting)
        got = b""
        while len(got) < 64:  # the daemon's greeting
            chunk = s.recv(64 - len(got))
            if not chunk:
                result[k] = "closed during the greeting"
                return
            got += chunk
        s.sendall(ready)
        s.sendall(b"\x02" + struct.pack(">Q", announce))  # long frame, last
        chunk = b"\xa5" * (64 * 1024)
        sent = 0
        while sent < body_bytes:
            s.sendall(chunk)
            sent += len(chunk)
        # Everything written: the daemon would now hold it. Wait for its verdict.
        s.settimeout(10)
        while s.recv(65536):
            pass
        result[k] = "wrote all %d bytes before the daemon closed" % body_bytes
    except (ConnectionResetError, BrokenPipeError, socket.timeout) as e:
        result[k] = True if not isinstance(e, socket.timeout) else "timed out: %s" % e
    finally:
        s.close()


def case_oversize(env):
    """14 connections at once announce 1 GiB frames (ZMQ_MAXMSGSIZE is 2 x
    limits.max_message_size = 512 KiB) and stream 16 MiB of body each: all are
    disconnected, VmRSS grows by < 20 MB (peak over the attack), the daemon answers and
    still counts a real client's samples."""
    conns, body = 14, 16 * MB
    with env.daemon(params={"window": 256, "subsequence": 16, "hop": 64, "warmup": 128,
                            "range": 5.0},
                    limits={"max_message_size": 256 * 1024}) as d:
        sock = env.pusher(d.ingest)
        env.send_series(sock, "real/1", [float(k % 7) for k in range(300)], batch=100)
        d.wait_samples({"real/1": 300})
        time.sleep(0.5)
        before = rss_bytes(d.proc.pid)
        sampler = RssSampler(d.proc.pid)
        port = int(d.ingest.rsplit(":", 1)[1])
        for round_ in range(3):  # again after the first disconnections
            result = [None] * conns
            threads = [threading.Thread(target=hostile_sender,
                                        args=(port, 1 << 30, body, result, k))
                       for k in range(conns)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            bad = [(k, r) for k, r in enumerate(result) if r is not True]
            check(not bad, "round %d: %d of %d hostile senders were not disconnected: %s" %
                  (round_, len(bad), conns, bad[:3]))
        time.sleep(0.5)
        peak = max(sampler.close(), rss_bytes(d.proc.pid))
        growth = peak - before
        print("# oversize: %d rounds x %d connections, 1 GiB announced, %d MiB streamed each;"
              " VmRSS %.1f MB before, peak %.1f MB, growth %.2f MB" %
              (3, conns, body // MB, before / MB, peak / MB, growth / MB))
        check(growth < 20 * MB or not RSS_BOUNDS, "VmRSS grew by %.1f MB (limit 20 MB)" %
              (growth / MB))
        if not RSS_BOUNDS:
            print("# VmRSS bound not checked: ASan or a wrapper holds memory of its own")
        env.send_series(sock, "real/1", [float(k % 5) for k in range(100)], first_seq=300)
        d.wait_samples({"real/1": 400})
        sock.close()


# ---- slow subscriber ----------------------------------------------------------------

class SeqReader:
    """A SUB socket whose alerts are checked per stream as they are read: seq must
    increase; jumps are gaps. read() drains what is queued."""

    def __init__(self, env, endpoint, prefix, rcvbuf=None):
        self.env = env
        self.sock = env.zctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        if rcvbuf:  # a small kernel buffer: the stall reaches the daemon's queue soon
            self.sock.setsockopt(zmq.RCVBUF, rcvbuf)
            self.sock.setsockopt(zmq.RCVHWM, 100)
        self.sock.setsockopt_string(zmq.SUBSCRIBE, prefix)
        self.sock.connect(endpoint)
        self.last = {}  # stream -> last seq seen
        self.count = {}  # stream -> alerts received
        self.gaps = {}  # stream -> seqs skipped
        self.first = {}  # stream -> first seq seen

    def read(self, timeout_ms=0):
        """Reads every queued alert (waiting timeout_ms for the first); returns how many."""
        n = 0
        while self.sock.poll(timeout_ms if n == 0 else 0):
            topic, body = self.sock.recv_multipart()
            a = self.env.pb.Alert()
            a.ParseFromString(body)
            s = a.stream_id
            check(topic.decode() == s, "topic %r carries an alert of %r" % (topic, s))
            check(a.seq > self.last.get(s, 0), "stream %s: seq %d after %d" %
                  (s, a.seq, self.last.get(s, 0)))
            self.first.setdefault(s, a.seq)
            self.gaps[s] = self.gaps.get(s, 0) + a.seq - self.last.get(s, 0) - 1
            self.last[s] = a.seq
            self.count[s] = self.count.get(s, 0) + 1
            n += 1
        return n


def gap_feeder(env, endpoint, streams, rate, stop):
    """Sends single-sample batches with every other seq missing: each batch after a
    stream's first opens a gap, one GAP alert. About `rate` batches per second."""
    sock = env.pusher(endpoint)
    seq = 0
    t0 = time.monotonic()
    sent = 0
    while not stop.is_set():
        for s in streams:
            sock.send(env.batch(s, seq, [float(seq % 11)]))
        sent += len(streams)
        seq += 2
        ahead = sent / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    sock.close()
    return seq


def case_slow_subscriber(env):
    stall = float(os.environ.get("TSMINE_STALL_S", "60"))
    streams = ["gap/%d" % k for k in range(4)]
    hwm = 1000
    p = {"window": 64, "subsequence": 8, "hop": 64, "warmup": 32, "range": 1e9, "motif": False}
    with env.daemon(params=p, alerts={"hwm": hwm}) as d:
        fast = SeqReader(env, d.alerts, "")
        picky = SeqReader(env, d.alerts, "gap/1")  # one stream by prefix
        slow = SeqReader(env, d.alerts, "", rcvbuf=4096)
        # Subscriptions travel asynchronously: feed until each reader got an alert.
        stop = threading.Event()
        feeder = threading.Thread(target=gap_feeder, args=(env, d.ingest, streams, 1000, stop))
        feeder.start()
        try:
            def everyone():
                return all([r.read(20) >= 0 and r.count for r in (fast, picky, slow)])
            wait_until(everyone, 20, "every subscriber to get an alert")
            # The stall: fast and picky keep reading, slow reads nothing.
            t0 = time.monotonic()
            rss = []
            while time.monotonic() - t0 < stall:
                fast.read(50)
                picky.read(0)
                rss.append((time.monotonic() - t0, rss_bytes(d.proc.pid)))
            # Then everyone reads while alerts keep coming for 3 s, so that what the
            # stalled one lost lies between alerts it gets: gaps it can see.
            t1 = time.monotonic()
            while time.monotonic() - t1 < 3:
                for r in (fast, picky, slow):
                    r.read(10)
        finally:
            stop.set()
            feeder.join()
        st = d.status()
        # Let everything still queued arrive.
        def settled():
            fast.read(100)
            picky.read(0)
            slow.read(0)
            now = d.status()
            return all(fast.last.get(s) == now["streams"][s]["alerts"] for s in streams) and now
        st = wait_until(settled, 60, "the reading subscribers to get every counted alert")
        for _ in range(20):  # the stalled one drains its queue
            if not slow.read(200):
                break

        n = {s: st["streams"][s]["alerts"] for s in streams}
        drops = st["counters"]["alert_drops"]
        # 1. memory: flat over the stall once the stalled queue filled (the first 10 s
        #    or 10 %), and bounded overall.
        base = [r for t, r in rss if t >= min(10.0, stall / 6)]
        early, late = base[0], max(base)
        print("# slow_subscriber: stall %.0f s, %d alerts published (%s), alerts.hwm %d" %
              (stall, sum(n.values()), n, hwm))
        print("# VmRSS during the stall: %.1f MB at %.0f s, max %.1f MB after, first %.1f MB;"
              " growth %.2f MB" % (early / MB, min(10.0, stall / 6), late / MB, rss[0][1] / MB,
                                   (late - early) / MB))
        check(late - early < 2 * MB or not RSS_BOUNDS,
              "VmRSS grew by %.2f MB during the stall (limit 2 MB)" % ((late - early) / MB))
        if not RSS_BOUNDS:
            print("# VmRSS bound not checked: ASan or a wrapper holds memory of its own")
        # 2. the readers lost nothing: seq 1..N per stream without a gap.
        for s in streams:
            check(fast.first[s] == 1 and fast.count[s] == n[s] and fast.gaps[s] == 0,
                  "reader: stream %s: %d alerts, first seq %d, %d gaps; daemon count %d" %
                  (s, fast.count[s], fast.first[s], fast.gaps[s], n[s]))
        check(set(picky.count) == {"gap/1"} and picky.count["gap/1"] == n["gap/1"] and
              picky.gaps["gap/1"] == 0, "prefix reader: %s alerts, %s gaps, daemon %d" %
              (picky.count, picky.gaps, n["gap/1"]))
        # 3. the stalled one: its gaps are exactly the alerts it lacks, and there are
        #    some (else the test proved nothing).
        lost = {s: n[s] - slow.count.get(s, 0) - (slow.first.get(s, 1) - 1) for s in streams}
        print("# stalled subscriber: received %d, gaps in seq %d, lacking %d; the readers' "
              "gaps 0; alert_drops %d" % (sum(slow.count.values()), sum(slow.gaps.values()),
                                         sum(lost.values()), drops))
        for s in streams:
            tail = n[s] - slow.last.get(s, 0)
            check(slow.gaps.get(s, 0) + tail == lost[s],
                  "stalled: stream %s: gaps %d + missing tail %d != lacking %d" %
                  (s, slow.gaps.get(s, 0), tail, lost[s]))
        check(sum(slow.gaps.values()) > 0, "the stalled subscriber lost nothing: the stall "
              "never filled its queue (the test is void)")
        # 4. alert_drops counts alerts that reached no subscriber: the readers' gaps.
        check(drops == sum(fast.gaps.values()),
              "alert_drops %d, the reading subscriber's gaps %d" % (drops,
                                                                   sum(fast.gaps.values())))
        for r in (fast, picky, slow):
            r.sock.close()


CASES = {"oversize": case_oversize, "slow_subscriber": case_slow_subscriber}


def main():
    return harness.run_cases(__doc__, CASES)


if __name__ == "__main__":
    sys.exit(main())
