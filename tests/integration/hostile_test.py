#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""hostile_test.py - tsmined against malformed and hostile input (issue 5 item 3),
through its real sockets: the real daemon on free loopback ports (harness.py).

    hostile_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  malformed  a table of malformed messages, sent one at a time: each is counted under
             its own rejection reason (exactly one more, nothing else moves) and the
             control socket answers after every one; then 2,000 distinct stream ids
             against max_streams = 16.
  raw        raw TCP clients write random bytes and bogus ZMTP greetings to the ingest
             and control ports while a real client publishes: every real sample is
             counted, the real alerts arrive (an ANOMALY event on each of the two
             planted anomalies), and every STATUS request made during the attack (a
             fresh connection each, ~10 a second) is answered within CONTROL_BOUND_MS.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import math
import os
import random
import socket
import struct
import sys
import threading
import time

import harness
from harness import Failure, check, wait_until

SEED = 20240807
# The bound on a STATUS reply during the raw attack. Answers take milliseconds; before
# sockets.c refused ZMTP/1.0 peers on the control socket, random bytes decoded as
# ZMTP/1.0 messages made libzmq's REP drop the next real reply, so most requests got
# none at all.
CONTROL_BOUND_MS = 2000
# STATUS requests made during the attack (one per 0.1 s: the attack lasts ~3 s).
CONTROL_PROBES = 30


def wire_values(values):
    """Field 7 (values), packed: key, length, little-endian doubles."""
    data = struct.pack("<%dd" % len(values), *values)
    return b"\x3a" + varint(len(data)) + data


def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def malformed_cases(env):
    """(name, bytes, reason): every message is refused under that reason."""
    pb = env.pb

    def msg(**kw):
        kw.setdefault("schema_version", 1)
        kw.setdefault("stream_id", "m/ok")
        kw.setdefault("values", [1.0, 2.0])
        return pb.SampleBatch(**kw).SerializeToString()
    return [
        ("truncated varint", b"\x18\xff", "decode"),
        ("truncated varint, 11 bytes", b"\x18" + b"\xff" * 10 + b"\x01", "decode"),
        ("length prefix 2^32-1", b"\x12\xff\xff\xff\xff\x0f" + b"x" * 16, "decode"),
        ("stream_id as a varint", b"\x10\x01" + wire_values([1.0]), "decode"),
        ("values as fixed32", b"\x12\x01a\x3d\x00\x00\x80\x3f", "decode"),
        ("values with a partial double", b"\x12\x01a\x3a\x04\x00\x00\x00\x00", "decode"),
        ("field number 0", b"\x80\x00\x01\x12\x01a" + wire_values([1.0]), "decode"),
        ("NaN sample", msg(stream_id="m/nan", values=[1.0, float("nan")]), "nonfinite"),
        ("+Inf sample", msg(stream_id="m/inf", values=[float("inf")]), "nonfinite"),
        ("-Inf sample", msg(stream_id="m/inf", values=[0.0, float("-inf")]), "nonfinite"),
        ("empty stream id", msg(stream_id=""), "bad_id"),
        ("huge stream id", msg(stream_id="h" * 50000), "bad_id"),
        ("256-byte stream id", msg(stream_id="h" * 256), "bad_id"),
        ("NUL inside the stream id", b"\x12\x05m/\x00ok" + wire_values([1.0]), "bad_id"),
        ("control character in the id", msg(stream_id="m/\x07"), "bad_id"),
        ("no values", msg(values=[]), "empty"),
        ("timestamps going backwards", msg(timestamps_ns=[30, 20]), "time_backwards"),
        ("one timestamp for two values", msg(timestamps_ns=[30]), "timestamps"),
        ("negative period", msg(period_ns=-5), "timestamps"),
        ("schema_version 2", msg(schema_version=2), "schema_version"),
        ("sequence numbers wrap", msg(first_seq=2**64 - 1), "bad_seq"),
        ("more values than the window", msg(stream_id="m/large", values=[0.5] * 65),
         "too_large"),
    ]


def case_malformed(env):
    p = {"window": 64, "subsequence": 8, "hop": 16, "warmup": 32, "range": 1.0}
    with env.daemon(params=p, limits={"max_streams": 16, "max_message_size": 65536}) as d:
        sock = env.pusher(d.ingest)
        # A stream taken first, so that the cross-batch cases have something to go against.
        sock.send(env.batch("m/ok", 0, [1.0, 2.0], period_ns=10, t0=1000))
        d.wait_samples({"m/ok": 2})
        cases = malformed_cases(env)
        # Across batches: time going backwards and a duplicate, against m/ok's state
        # (seq 0, 1 at 1000, 1010).
        cases.append(("timestamps going backwards across batches", env.pb.SampleBatch(
            schema_version=1, stream_id="m/ok", first_seq=2, first_timestamp_ns=1005,
            period_ns=10, values=[3.0]).SerializeToString(), "time_backwards"))
        cases.append(("duplicate batch", env.batch("m/ok", 0, [1.0, 2.0], period_ns=10, t0=1000),
                      "duplicate"))
        before = d.status()["rejected"]
        for name, data, reason in cases:
            sock.send(data)
            want = dict(before)
            want[reason] = want.get(reason, 0) + 1

            def counted():
                st = d.status(timeout_ms=2000)  # the control socket answers: else Failure
                return st["rejected"] == want and st
            try:
                wait_until(counted, 10, "case %r to be counted as %s" % (name, reason))
            except Failure:
                now = d.status()["rejected"]
                raise Failure("case %r: want one more %s; counters moved: %s" % (
                    name, reason, {k: (before.get(k, 0), v) for k, v in now.items()
                                   if v != before.get(k, 0)}))
            before = want
        st = d.status()["streams"]
        check(st["m/ok"]["samples"] == 2, "m/ok took samples from a refused batch: %s"
              % st["m/ok"])

        # 2,000 distinct stream ids against max_streams = 16 (1 taken by m/ok).
        n = 2000
        for i in range(n):
            sock.send(env.batch("many/%05d" % i, 0, [1.0]))
        want = before.get("too_many_streams", 0) + n - 15
        wait_until(lambda: d.status()["rejected"].get("too_many_streams") == want, 30,
                   "%d too_many_streams" % want)
        st = d.status()
        check(len(st["streams"]) == 16, "%d streams, max_streams 16" % len(st["streams"]))
        check(sum(st["rejected"].values()) == sum(before.values()) + n - 15,
              "other counters moved: %s" % st["rejected"])
        # Oversized, on its own connection (libzmq may drop the connection that sends it).
        big = env.pusher(d.ingest)
        big.send(env.batch("m/big", 0, [0.5] * 10000))
        wait_until(lambda: d.status()["rejected"].get("oversized") == 1, 10, "oversized")
        sock.send(env.batch("m/ok", 2, [3.0], period_ns=10, t0=1000))
        d.wait_samples({"m/ok": 3})
        check(d.proc.poll() is None, "tsmined exited")
        print("# %d malformed cases, each under its own counter; %d stream ids refused" %
              (len(cases) + 1, n - 15))


def zmtp_greetings(rng):
    """Bogus ZMTP greetings: truncated, wrong signature, a future version, a bad
    mechanism, an overlong handshake, then garbage after a valid-looking start."""
    sig = b"\xff" + b"\x00" * 8 + b"\x7f"
    null = b"NULL" + b"\x00" * 16
    return [
        sig[:5],
        b"\xfe" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + null + b"\x00" + b"\x00" * 31,
        sig + b"\x09\x09" + null + b"\x00" * 32,
        sig + b"\x03\x00" + b"EVIL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31,
        sig + b"\x03\x00" + b"CURVE" + b"\x00" * 15 + b"\x00" + b"\x00" * 31 + b"\x04" * 4096,
        sig + b"\x03\x00" + null + b"\x00" + b"\x00" * 31 + b"\x04\xff" + bytes(rng.randrange(256)
                                                                          for _ in range(300)),
        sig + b"\x03\x00" + null + b"\x00" + b"\x00" * 31 +
        b"\x06\xff\xff\xff\xff\xff\xff\xff\xff" + b"\x00" * 64,  # a 2^64-1 byte command
        sig + b"\x01\x00",  # ZMTP 1.0/2.0-style short greeting
    ]


def attack(port, stop, stats, talk):
    """Connects to port again and again until stop is set, lets talk(sock) write to it,
    then reads whatever comes back; counts connections, and those the daemon cut short.
    At most ~200 connections a second: garbage, not a connection flood, so that the 2
    CI cores are left for the daemon and the real client."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                talk(s)
                s.settimeout(0.05)
                try:
                    s.recv(4096)
                except (socket.timeout, OSError):
                    pass
            stats["connections"] += 1
        except OSError:
            stats["refused"] += 1  # the daemon may close on us mid-write
        stop.wait(0.005)


def hostile_writer(port, rng, stop, stats):
    """Writes random bytes or a bogus greeting on each connection (attack)."""
    greetings = zmtp_greetings(rng)

    def talk(s):
        if rng.random() < 0.5:
            s.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2048))))
        else:
            s.sendall(rng.choice(greetings))
    attack(port, stop, stats, talk)


def envelope_writer(port, stop, stats):
    """A well-formed ZMTP/3.1 NULL DEALER on each connection (attack): after the
    handshake it sends one message without the empty delimiter a REQ puts first, then a
    malformed frame (so it is disconnected). Once was enough to make libzmq 4.3.4's REP
    drop the next reply to a real client (daemon/guard/sockets.c); the control socket is a
    ROUTER since."""
    null = b"NULL" + b"\x00" * 16
    hello = (b"\xff" + b"\x00" * 7 + b"\x01\x7f" + b"\x03\x01" + null + b"\x00" * 32 +
             b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER")

    def talk(s):
        s.sendall(hello)
        s.settimeout(0.5)
        got = b""
        while len(got) < 66 or len(got) < 66 + got[65]:  # greeting, READY
            x = s.recv(4096)
            if not x:
                break
            got += x
        s.sendall(b"\x00\x05hello" + b"\x02\x7f" + b"\xff" * 7)
    attack(port, stop, stats, talk)


def control_prober(d, stop, stats):
    """Asks for STATUS every 0.1 s until stop is set, each on a fresh connection as
    `tsmine status` does, counting the requests and those not answered within
    CONTROL_BOUND_MS."""
    while not stop.is_set():
        try:
            answered = d.status(timeout_ms=CONTROL_BOUND_MS, fail=False) is not None
        except Failure as e:  # answered, but refused
            stats["control_errors"].append(str(e))
            answered = True
        stats["control_requests"] += 1
        stats["control_missed"] += not answered
        stop.wait(0.1)


def case_raw(env):
    # the daemon's detection defaults (the views' scores), on a window and m of its own
    p = {"window": 512, "subsequence": 32, "hop": 128, "motif": False}
    rng = random.Random(SEED)
    values = [10 * math.sin(2 * math.pi * k / 64) + rng.gauss(0, 1) for k in range(4096)]
    planted = (1500, 3000)
    for k in range(32):  # two planted anomalies (a burst the noisy sine never shows)
        for a in planted:
            values[a + k] += rng.gauss(0, 3) + (8 if k % 2 else -8)
    with env.daemon(params=p) as d:
        sub = harness.Subscriber(env, d.alerts, "real/")
        time.sleep(0.5)
        stop = threading.Event()
        stats = {"connections": 0, "refused": 0, "control_requests": 0, "control_missed": 0,
                 "control_errors": []}
        writers = [threading.Thread(target=hostile_writer,
                                    args=(port, random.Random(SEED + i), stop, stats))
                   for i, port in enumerate([d.ports[0], d.ports[0], d.ports[2], d.ports[2]])]
        writers.append(threading.Thread(target=envelope_writer, args=(d.ports[2], stop, stats)))
        prober = threading.Thread(target=control_prober, args=(d, stop, stats))
        for t in writers:
            t.start()
        try:
            time.sleep(0.5)
            prober.start()  # the attack is under way
            sock = env.pusher(d.ingest)
            for i in range(0, len(values), 128):
                sock.send(env.batch("real/0", i, values[i:i + 128]))
                time.sleep(0.02)
            # Samples and alerts flow (the control socket only reads counters here, so
            # a missed reply is retried).
            def counted():
                st = d.status(timeout_ms=1000, fail=False)
                return st and st["streams"].get("real/0", {}).get("samples") == len(values) and st
            wait_until(counted, 60, "every real sample to be counted")

            def delivered():
                st = d.status(timeout_ms=1000, fail=False)
                return st and len(sub.get()) == st["streams"]["real/0"]["alerts"]
            wait_until(delivered, 30, "the subscriber to get every counted alert")
            wait_until(lambda: stats["control_requests"] >= CONTROL_PROBES or
                       stats["control_missed"], 60, "%d STATUS requests" % CONTROL_PROBES)
        finally:
            stop.set()
            for t in writers + ([prober] if prober.ident else []):
                t.join()
        check(stats["control_requests"] >= CONTROL_PROBES and stats["control_missed"] == 0,
              "%d of %d STATUS requests made during the attack got no reply within %d ms" %
              (stats["control_missed"], stats["control_requests"], CONTROL_BOUND_MS))
        check(not stats["control_errors"], "STATUS refused during the attack: %s" %
              stats["control_errors"][:3])
        # Once the garbage stops, control answers again.
        wait_until(lambda: d.status(timeout_ms=1000, fail=False), 15, "a control reply")
        got = sub.get()
        anomalies = [a for s, a in got if a.kind == env.pb.ANOMALY]
        for at in planted:  # the ANOMALY's subsequence overlaps the planted 32 samples
            check(any(at - 32 < a.start_seq < at + 32 for a in anomalies),
                  "ANOMALY alerts at %s, anomalies at %s" %
                  (sorted(a.start_seq for a in anomalies), planted))
        check(stats["connections"] >= 20, "only %d hostile connections" % stats["connections"])
        st = d.status()
        check(st["streams"]["real/0"]["samples"] == len(values) and
              st["streams"]["real/0"]["gaps"] == 0, "real/0: %s" % st["streams"]["real/0"])
        check(d.proc.poll() is None, "tsmined exited")
        sub.close()
        print("# %d hostile connections (%d cut short), %d real samples, %d alerts, "
              "%d STATUS requests during the attack, each answered within %d ms" %
              (stats["connections"], stats["refused"], len(values), len(got),
               stats["control_requests"], CONTROL_BOUND_MS))


CASES = {"malformed": case_malformed, "raw": case_raw}


def main():
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
