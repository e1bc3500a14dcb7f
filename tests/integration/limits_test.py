#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""limits_test.py - tsmined gives a hostile peer a bounded share of memory and
descriptors (issue 17 items 1 and 9), through its real sockets: raw ZMTP peers, pyzmq
clients and a daemon under `ulimit -n` / `ulimit -v`.

    limits_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  multipart      raw ZMTP peers stream a message that never ends (frames with MORE set)
                 to each socket, with large and with empty frames: libzmq keeps such
                 frames until the message ends, so the guard must cut each peer; the
                 daemon's resident memory (VmRSS) peaks less than MULTIPART_BOUND above
                 where it was, and comes back; control answers; a real client's samples
                 are counted.
  flood          one PUSH floods 4096-sample batches of noise into a busy daemon: the
                 ingest queue is bounded in bytes (limits.peer_buffer), the samples read
                 and not yet processed stay within FLOOD_STAGED_MIN or a second of
                 processing, VmRSS grows less than FLOOD_BOUND.
  subscribe      a 16 MB SUBSCRIBE is refused at its length, a burst of distinct
                 subscriptions is cut, a real subscriber still gets its alerts, SIGTERM
                 takes less than STOP_BOUND_S.
  curve_command  with CURVE on, a 1 GB command frame before any key is shown, on each
                 socket: refused at its length, VmRSS +less than 16 MB.
  dealers        DEALERs send STATUS requests and never read the replies: the replies
                 are dropped and counted (control_reply_drops), VmRSS grows less than
                 DEALERS_BOUND, and a REQ client is answered within CONTROL_BOUND_S.
  descriptors    under `ulimit -n 64`, 120 idle TCP connections to ingest and 20 to
                 /metrics: the newest are cut (peers_cut_connections), every STATUS
                 request is answered within CONTROL_BOUND_S, checkpoints succeed, and
                 the log stays small (libmicrohttpd's accept errors are rate-limited);
                 then, without a ulimit, 1,100 connections open and /metrics answers.
  address_space  under `ulimit -v` too low to start, the daemon never aborts and says
                 why (the address space), never blaming the metrics address; under
                 `ulimit -v 128M`, 20,000 new streams: the daemon refuses the ones that
                 do not fit (reason `memory`) instead of aborting inside libzmq, its
                 address space never comes within 4 MB of the limit, it keeps
                 answering, and stops with a checkpoint; the same with 1,500 idle
                 connections (fewer when the test's descriptors run short).
  budget         limits.memory_budget just above the daemon's memory: new streams push
                 it over, and then new streams are refused (`memory`), known streams go
                 on, a checkpoint is written at once, a new connection is cut.

Bounds were measured on a loaded 2-core machine (the worst seen is in each constant's
comment). Each case takes 1 to 14 s. Prints `ok - NAME` or `not ok - NAME` with the
reason; exits 0, 1, or 77.
"""

import os
import random
import resource
import socket
import struct
import sys
import threading
import time
import urllib.request

import harness
from harness import Failure, check, wait_until, zmq
from memory_test import RSS_BOUNDS, RssSampler, rss_bytes, status_bytes

MB = 1 << 20
# Worst figures seen over 30 runs of the suite with ctest -j2 on a 2-core machine that
# other builds and tests kept busy; before the fix in brackets.
# Peak VmRSS growth while one peer streams a message that never ends (worst: +59 MB with
# empty frames, each 64 bytes in libzmq for 2 on the wire; [+514 MB for 512 MB sent,
# +1392 MB for 64 MB of 1-byte frames, growing as long as the peer sends]).
MULTIPART_BOUND = 160 * MB
RETAINED_BOUND = 24 * MB  # VmRSS above an attack's start, 10 s after its cut
# ... while one PUSH floods a busy daemon for FLOOD_S (worst: +73 MB, of which the
# connection's queue is at most limits.peer_buffer, 32 MiB, the rest the engine's
# staging; [+1307 MB in 3 s]).
FLOOD_S = 3
FLOOD_BOUND = 128 * MB
# ... while 4 DEALERs never read their STATUS replies for DEALERS_S (worst: +1.3 MB;
# [+622 MB in 10 s]).
DEALERS_S = 5
DEALERS_BOUND = 64 * MB
# A STATUS request during an attack is answered within this (worst: 0.31 s, during the
# flood; under ASan, 0.86 s alone, beyond 1 s beside other tests: harness.SLOWER).
CONTROL_BOUND_S = 1.0 * harness.SLOWER
# What the daemon has read but not processed at the flood's end, in samples: a drain
# stops at about a tick's worth (TICK_TARGET_NS in daemon/core/loop.c), at least 16,384
# (PENDING_TICK), plus one message; this allows a second's worth at the rate it
# processed, at least FLOOD_STAGED_MIN (worst: 47,104; [1.26M and growing for as long
# as the flood, 20.5M under ASan: the drains had no bound while the passes bound the
# ticks]).
FLOOD_STAGED_MIN = 1 << 17
# SIGTERM after the subscription attacks (worst: 0.02 s; [> 150 s after a 16 MB
# SUBSCRIBE, as the red team measured]).
STOP_BOUND_S = 5.0

SMALL = {"window": 256, "subsequence": 16, "hop": 64, "warmup": 128, "range": 5.0}


# ---- raw ZMTP 3.0 peers ----------------------------------------------------------

def greeting(mechanism=b"NULL"):
    """A ZMTP 3.0 greeting as a client: signature, version, mechanism, as-server 0."""
    return (b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + mechanism.ljust(20, b"\x00") +
            b"\x00" + b"\x00" * 31)


def ready(socket_type):
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    return b"\x04" + bytes([len(body)]) + body


def frame(data, more):
    flags = 1 if more else 0
    if len(data) < 256:
        return bytes([flags, len(data)]) + data
    return bytes([flags | 2]) + struct.pack(">Q", len(data)) + data


def raw_peer(port, socket_type, timeout=5):
    """A TCP connection that has done the NULL handshake as socket_type."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(greeting())
    got = b""
    while len(got) < 64:
        chunk = s.recv(64 - len(got))
        check(chunk, "the daemon closed during the greeting")
        got += chunk
    s.sendall(ready(socket_type))
    return s


def stream_unended(port, socket_type, frame_size, cap, stall_s=2.0):
    """Streams frames of frame_size bytes, every one with MORE set, until the daemon
    stops taking them (an error, or no progress for stall_s) or cap bytes went out.
    Returns the bytes sent and whether it was stopped."""
    s = raw_peer(port, socket_type)
    s.settimeout(stall_s)
    one = frame(b"\xa5" * frame_size, True)
    blob = one * max(1, (256 * 1024) // len(one))
    sent = 0
    try:
        while sent < cap:
            s.sendall(blob)
            sent += len(blob)
        return sent, False
    except (OSError, socket.timeout):
        return sent, True
    finally:
        s.close()


# ---- daemons ---------------------------------------------------------------------

class LimitedDaemon(harness.Daemon):
    """A harness Daemon started under shell ulimits (e.g. "-n 64"), optionally with
    /metrics on a free port."""

    def __init__(self, env, workdir, ulimit=None, metrics=False, **kw):
        if ulimit:
            wrapper = os.path.join(workdir, "tsmined-limited")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nulimit %s || exit 99\nexec %s \"$@\"\n" % (ulimit,
                                                                              env.tsmined))
            os.chmod(wrapper, 0o755)
            env = EnvWith(env, wrapper)
        super().__init__(env, workdir, **kw)
        self.metrics_port = harness.free_port() if metrics else None

    def write_config(self):
        super().write_config()
        if self.metrics_port:
            with open(self.conf) as f:
                text = f.read().replace('metrics = { listen = ""; };',
                                        'metrics = { listen = "127.0.0.1:%d"; };' %
                                        self.metrics_port)
            with open(self.conf, "w") as f:
                f.write(text)


class EnvWith:
    """The harness Env with another tsmined (a wrapper that sets limits, then execs it)."""

    def __init__(self, env, tsmined):
        self._env, self.tsmined = env, tsmined

    def __getattr__(self, name):
        return getattr(self._env, name)


def limited(env, name, **kw):
    d = os.path.join(env.dir, name)
    os.makedirs(d, exist_ok=True)
    return LimitedDaemon(env, d, **kw)


def counters(d, timeout_ms=3000):
    """The STATUS counters (those a daemon before issue 17 lacks read as 0)."""
    c = d.status(timeout_ms=timeout_ms)["counters"]
    for name in ("peers_cut_memory", "peers_cut_connections", "control_reply_drops",
                 "memory_pressure", "resident_bytes"):
        c.setdefault(name, 0)
    return c


def timed_status(d, timeout_s=CONTROL_BOUND_S):
    """Seconds a fresh REQ client waits for a STATUS reply (fails beyond timeout_s)."""
    t0 = time.monotonic()
    d.status(timeout_ms=int(timeout_s * 1000))
    return time.monotonic() - t0


def noise(rng, n):
    return [rng.random() for _ in range(n)]


# ---- multipart ---------------------------------------------------------------------

def case_multipart(env):
    with env.daemon(params=SMALL) as d:
        sock = env.pusher(d.ingest)
        env.send_series(sock, "real/1", [float(k % 7) for k in range(300)], batch=100)
        d.wait_samples({"real/1": 300})
        attacks = [  # socket, its peer type, frame size (alerts: at most 4 KiB frames)
            ("ingest", b"PUSH", 65536), ("ingest", b"PUSH", 0),
            ("control", b"DEALER", 60000), ("control", b"DEALER", 0),
            ("alerts", b"SUB", 4000), ("alerts", b"SUB", 0)]
        port = {"ingest": d.ports[0], "alerts": d.ports[1], "control": d.ports[2]}
        worst = 0
        for n, (name, kind, size) in enumerate(attacks):
            time.sleep(0.3)
            before = rss_bytes(d.proc.pid)
            sampler = RssSampler(d.proc.pid)
            sent, stopped = stream_unended(port[name], kind, size, 1 << 30)
            peak = sampler.close() - before
            worst = max(worst, peak)
            cut = counters(d)["peers_cut_memory"]
            print("# %s, %d-byte frames: cut after %.1f MB sent, VmRSS peak +%.1f MB" %
                  (name, size, sent / MB, peak / MB))
            check(stopped and cut == n + 1, "%s, %d-byte frames: %.0f MB went in (stopped: %s,"
                  " peers cut: %d)" % (name, size, sent / MB, stopped, cut))
            check(peak < MULTIPART_BOUND or not RSS_BOUNDS,
                  "%s, %d-byte frames: VmRSS peak +%.0f MB (bound %.0f MB)" %
                  (name, size, peak / MB, MULTIPART_BOUND / MB))
            # what libzmq held is freed and given back, but for what the allocators keep:
            # up to 16.1 MB after a cut at 30-44 MB sent on this 2-core machine (the same
            # with malloc_trim for 20 s: not a timing matter); a peer's whole 34.7 MB kept
            # would stay beyond the bound
            try:
                wait_until(lambda: (rss_bytes(d.proc.pid) < before + RETAINED_BOUND or
                                    not RSS_BOUNDS),
                           10, "VmRSS to come back after the cut")
            except Failure:
                raise Failure("%s, %d-byte frames: VmRSS %.1f MB above where it was, 10 s after "
                              "the cut" % (name, size, (rss_bytes(d.proc.pid) - before) / MB))
            check(timed_status(d) < CONTROL_BOUND_S, "control slow after the attack")
        env.send_series(sock, "real/1", [float(k % 5) for k in range(100)], first_seq=300)
        d.wait_samples({"real/1": 400})
        print("# %d unended messages cut, worst VmRSS peak +%.1f MB (bound %d MB)" %
              (len(attacks), worst / MB, MULTIPART_BOUND // MB))


# ---- flood -------------------------------------------------------------------------

def case_flood(env):
    # the detection defaults on noise (the windowed passes' worst case): a busy daemon
    with env.daemon(params={"motif": True}) as d:
        rng = random.Random(17)
        values = env.pb.SampleBatch(values=noise(rng, 4096)).SerializeToString()
        p = env.zctx.socket(zmq.PUSH)
        p.setsockopt(zmq.LINGER, 0)
        p.setsockopt(zmq.SNDTIMEO, 100)
        p.connect(d.ingest)
        time.sleep(0.3)
        before = rss_bytes(d.proc.pid)
        sampler = RssSampler(d.proc.pid)
        seqs, sent, t0 = [0] * 8, 0, time.monotonic()
        while time.monotonic() - t0 < FLOOD_S:
            k = sent % 8
            head = env.pb.SampleBatch(schema_version=1, stream_id="flood/%d" % k,
                                      first_seq=seqs[k], first_timestamp_ns=1 + seqs[k] * 1000,
                                      period_ns=1000).SerializeToString()
            try:
                p.send(head + values)
            except zmq.Again:  # the daemon's queue is full: backpressure
                continue
            seqs[k] += 4096
            sent += 1
        peak = sampler.close() - before
        answer = timed_status(d)
        counters = d.status()["counters"]
        staged = counters.get("pending_samples", 0)
        staged_bound = max(FLOOD_STAGED_MIN, counters.get("processed_samples", 0) / FLOOD_S)
        hwm = 32 * MB // (2 * 256 * 1024)
        print("# flood: %d batches of 4096 samples (%.0f MB) offered in %d s; VmRSS peak "
              "+%.1f MB (bound %d MB; ingest queue %d messages); STATUS in %.2f s; %d "
              "samples staged (bound %d), %d processed" %
              (sent, sent * len(values) / MB, FLOOD_S, peak / MB, FLOOD_BOUND // MB, hwm,
               answer, staged, staged_bound, counters.get("processed_samples", 0)))
        check(staged <= staged_bound, "%d samples read and not processed (bound %d)" %
              (staged, staged_bound))
        check(peak < FLOOD_BOUND or not RSS_BOUNDS,
              "VmRSS peak +%.0f MB (bound %.0f MB)" % (peak / MB, FLOOD_BOUND / MB))
        p.close()


# ---- subscribe -----------------------------------------------------------------------

def gap_feeder(env, endpoint, stop):
    """GAP alerts, ~500 a second (every other seq missing), so that the publisher thread
    sends and libzmq reads the subscriptions."""
    sock = env.pusher(endpoint)
    seq = 0
    while not stop.is_set():
        sock.send(env.batch("gap/0", seq, [1.0]))
        seq += 2
        time.sleep(0.002)
    sock.close()


def case_subscribe(env):
    with env.daemon(params={"window": 64, "subsequence": 8, "hop": 64, "warmup": 32,
                            "range": 1e9, "motif": False}) as d:
        stop = threading.Event()
        feeder = threading.Thread(target=gap_feeder, args=(env, d.ingest, stop))
        feeder.start()
        try:
            with harness.Subscriber(env, d.alerts, "gap/") as sub:
                wait_until(lambda: sub.get(), 20, "a real subscriber's first alert")
                time.sleep(0.3)
                before = rss_bytes(d.proc.pid)
                sampler = RssSampler(d.proc.pid)
                # 1. one 16 MB SUBSCRIBE: refused at its length
                s = raw_peer(d.ports[1], b"SUB")
                s.settimeout(5)
                refused = False
                try:
                    s.sendall(frame(b"\x01" + b"x" * (16 * MB - 1), False))
                    s.recv(1)
                except (OSError, socket.timeout):
                    refused = True
                s.close()
                # 2. distinct 200-byte subscriptions as fast as they go: cut
                s = raw_peer(d.ports[1], b"SUB")
                s.settimeout(2)
                sent = 0
                try:
                    while sent < 256 * MB:
                        blob = b"".join(frame(b"\x01" + b"%08d" % (sent + i) + b"y" * 192, False)
                                        for i in range(512))
                        s.sendall(blob)
                        sent += len(blob)
                except (OSError, socket.timeout):
                    pass
                s.close()
                time.sleep(1)
                peak = sampler.close() - before
                n0 = len(sub.get())
                wait_until(lambda: len(sub.get()) > n0 + 10, 10, "alerts after the attacks")
                c = counters(d)
        finally:
            stop.set()
            feeder.join()
        print("# 16 MB SUBSCRIBE refused: %s; %.1f MB of subscriptions sent before the cut; "
              "VmRSS peak +%.1f MB; peers cut: %d" % (refused, sent / MB, peak / MB,
                                                     c["peers_cut_memory"]))
        check(refused, "the 16 MB SUBSCRIBE was taken")
        check(c["peers_cut_memory"] == 1 and sent < 64 * MB,
              "the subscription burst was not cut (%.0f MB sent)" % (sent / MB))
        check(peak < 48 * MB or not RSS_BOUNDS, "VmRSS peak +%.0f MB" % (peak / MB))
        t0 = time.monotonic()
        rc = d.stop(timeout=30)
        took = time.monotonic() - t0
        print("# SIGTERM: exit %d in %.2f s (bound %.0f s)" % (rc, took, STOP_BOUND_S))
        check(rc == 0 and took < STOP_BOUND_S, "SIGTERM: exit %d in %.1f s" % (rc, took))


# ---- curve_command -------------------------------------------------------------------

def case_curve_command(env):
    if not zmq.has("curve"):
        print("SKIP: this libzmq has no CURVE")
        return 77
    import security_test
    keys = security_test.Keys(env, env.dir)
    with security_test.secure_daemon(env, keys) as d:
        for name, port in (("ingest", d.ports[0]), ("alerts", d.ports[1]),
                           ("control", d.ports[2])):
            time.sleep(0.3)
            before = rss_bytes(d.proc.pid)
            sampler = RssSampler(d.proc.pid)
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(greeting(b"CURVE"))
            got = b""
            while len(got) < 64:
                got += s.recv(64 - len(got))
            s.sendall(b"\x06" + struct.pack(">Q", 1 << 30))  # a long command frame, 1 GB
            sent = 0
            try:
                while sent < 1 << 30:
                    s.sendall(b"\x5a" * MB)
                    sent += MB
            except (OSError, socket.timeout):
                pass
            s.close()
            time.sleep(0.3)
            peak = sampler.close() - before
            print("# CURVE %s: 1 GB command announced, %d MB sent before the daemon closed, "
                  "VmRSS peak +%.1f MB" % (name, sent // MB, peak / MB))
            check(sent < 64 * MB, "%s: %d MB of the 1 GB command went in" % (name, sent // MB))
            check(peak < 16 * MB or not RSS_BOUNDS, "%s: VmRSS peak +%.1f MB" % (name, peak / MB))


# ---- dealers -------------------------------------------------------------------------

def case_dealers(env):
    with env.daemon(params=SMALL) as d:
        sock = env.pusher(d.ingest)
        for i in range(500):  # STATUS replies of ~40 KB
            sock.send(env.batch("stream/with/a/long/name/%06d" % i, 0, [1.0]))
        wait_until(lambda: len(d.status()["streams"]) == 500, 30, "500 streams")
        req = env.pb.ControlRequest(schema_version=1,
                                    command=env.pb.ControlRequest.STATUS).SerializeToString()
        dealers = []
        for _ in range(4):
            x = env.zctx.socket(zmq.DEALER)
            x.setsockopt(zmq.LINGER, 0)
            x.setsockopt(zmq.RCVHWM, 1)
            x.setsockopt(zmq.RCVBUF, 4096)
            x.connect(d.control)
            dealers.append(x)
        time.sleep(0.3)
        before = rss_bytes(d.proc.pid)
        sampler = RssSampler(d.proc.pid)
        sent, answers, t0 = 0, [], time.monotonic()
        next_probe = t0 + 0.25
        while time.monotonic() - t0 < DEALERS_S:
            for x in dealers:
                try:
                    x.send_multipart([b"", req], zmq.DONTWAIT)
                    sent += 1
                except zmq.Again:
                    pass
            if time.monotonic() >= next_probe:
                answers.append(timed_status(d))
                next_probe += 0.25
            time.sleep(0.001)
        peak = sampler.close() - before
        drops = counters(d)["control_reply_drops"]
        for x in dealers:
            x.close()
        print("# 4 DEALERs: %d STATUS requests never read in %d s; replies dropped: %d; VmRSS "
              "peak +%.1f MB (bound %d MB); %d STATUS probes, slowest %.3f s" %
              (sent, DEALERS_S, drops, peak / MB, DEALERS_BOUND // MB, len(answers),
               max(answers)))
        check(drops > 0, "no reply was dropped")
        check(peak < DEALERS_BOUND or not RSS_BOUNDS, "VmRSS peak +%.0f MB" % (peak / MB))
        check(max(answers) < CONTROL_BOUND_S, "a STATUS took %.2f s" % max(answers))


# ---- descriptors ---------------------------------------------------------------------

def case_descriptors(env):
    if harness.WRAPPER:  # the ulimit would apply to the wrapper, with descriptors of its own
        print("SKIP: ulimit -n under a wrapper")
        return 77
    d = limited(env, "d", ulimit="-n 64", metrics=True, params=SMALL,
                limits={"checkpoint_interval": 1})
    with d:
        sock = env.pusher(d.ingest)
        sock.send(env.batch("s/1", 0, [1.0, 2.0, 3.0]))
        d.wait_samples({"s/1": 3})
        idle = []
        for port, n in ((d.ports[0], 120), (d.metrics_port, 20)):
            for _ in range(n):
                try:
                    idle.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                except OSError:  # the listen backlog is full: refused by the kernel
                    pass
        time.sleep(1.5)  # the guard cuts the newest beyond each socket's share
        c0 = counters(d, 5000)
        answers = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4:
            answers.append(timed_status(d))
            time.sleep(0.2)
        c1 = counters(d)
        log_size = os.path.getsize(d.log_path)
        print("# %d idle connections under ulimit -n 64: %d cut; %d STATUS requests, slowest "
              "%.3f s; checkpoints %d (failures %d) in 4 s; log %d bytes" %
              (len(idle), c1["peers_cut_connections"], len(answers), max(answers),
               c1["checkpoints"] - c0["checkpoints"],
               c1["checkpoint_failures"] - c0["checkpoint_failures"], log_size))
        check(c1["peers_cut_connections"] > 0, "no connection was cut")
        check(max(answers) < CONTROL_BOUND_S, "a STATUS took %.2f s" % max(answers))
        check(c1["checkpoints"] - c0["checkpoints"] >= 3 and
              c1["checkpoint_failures"] == c0["checkpoint_failures"],
              "checkpoints in 4 s: %d, failures %d" % (
                  c1["checkpoints"] - c0["checkpoints"],
                  c1["checkpoint_failures"] - c0["checkpoint_failures"]))
        check(log_size < 256 * 1024, "the log grew to %d bytes" % log_size)
        for s in idle:
            s.close()
        sock.send(env.batch("s/1", 3, [4.0]))
        d.wait_samples({"s/1": 4})
    # With 1,100 connections open (no ulimit), /metrics still answers: libmicrohttpd's
    # select() refused every descriptor from 1024 up.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        print("# the /metrics part skipped: this process may open only %d descriptors" % hard)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300) if hard == resource.RLIM_INFINITY
                                                else min(max(soft, 1300), hard), hard))
    with limited(env, "many", metrics=True, params=SMALL) as d:
        idle = [socket.create_connection(("127.0.0.1", d.ports[0]), timeout=2)
                for _ in range(1100)]
        wait_until(lambda: counters(d)["descriptors_open"] > 1100, 10, "1,100 connections")
        url = "http://127.0.0.1:%d/metrics" % d.metrics_port
        body = urllib.request.urlopen(url, timeout=5).read()
        check(b"tsmine_connections" in body, "/metrics: %r" % body[:200])
        print("# %d descriptors open: /metrics answered (%d bytes)" %
              (counters(d)["descriptors_open"], len(body)))
        for s in idle:
            s.close()


# ---- address_space -------------------------------------------------------------------

ABORTS = ("OUT OF MEMORY", "bad_alloc", "terminate called", "Assertion", "(src/")


def start_under(env, name, limit_kb, params=SMALL, metrics=False):
    """Starts tsmined under ulimit -v limit_kb; returns (daemon, rc, log): rc None when
    it answers, else its exit status."""
    d = limited(env, name, ulimit="-v %d" % limit_kb, params=params, metrics=metrics)
    try:
        d.start(timeout=10)
        rc = None
    except Failure:
        rc = d.proc.wait(10)
    with open(d.log_path) as f:
        log = f.read()
    return d, rc, log


def peak_under_128m(d):
    """VmPeak, checked to have left at least 4 MB of a 128 MB limit to libzmq (the guard
    keeps 16 MB)."""
    peak = status_bytes(d.proc.pid, "VmPeak")
    check(peak <= 128 * MB - 4 * MB, "the address space peaked at %.1f MB of 128 MB: less "
          "than 4 MB were left for libzmq" % (peak / MB))
    return peak


def stop_checkpointed(d, when):
    """SIGTERM: exit 0 with the final checkpoint, and no abort in the log."""
    rc = d.stop(timeout=30)
    with open(d.log_path) as f:
        log = f.read()
    check(rc == 0 and "checkpointed" in log, "stop %s: exit %d" % (when, rc))
    check(not any(a in log for a in ABORTS), "an abort: %s" % log[-300:])


def case_address_space(env):
    if not RSS_BOUNDS:  # ASan reserves terabytes of address space; a wrapper hides ulimit
        print("SKIP: ulimit -v cannot apply under ASan or a wrapper")
        return 77
    # 1. From too little to enough: never an abort, and a refused start says why.
    said, started = [], None
    for mb in range(12, 66, 2):
        d, rc, log = start_under(env, "as%d" % mb, mb * 1024, metrics=True)
        errors = [l for l in log.splitlines() if l.startswith("<3>")]
        if rc is None:
            started = mb
            d.kill()
            break
        d.kill()
        check(rc not in (-6, 134) and not any(a in log for a in ABORTS),
              "ulimit -v %dM: an abort (exit %s): %s" % (mb, rc, log[-300:]))
        if rc == 127:  # the dynamic loader could not map the libraries: not the daemon yet
            continue
        check(errors, "ulimit -v %dM: exit %s without an error line" % (mb, rc))
        check("metrics" not in errors[-1] or "thread" in errors[-1].lower(),
              "ulimit -v %dM: the start-up error blames the metrics address: %s" %
              (mb, errors[-1]))
        check("address space" in errors[-1] or "memory" in errors[-1].lower() or
              "thread" in errors[-1].lower(),
              "ulimit -v %dM: the error does not say why: %s" % (mb, errors[-1]))
        said.append((mb, rc, errors[-1].split(": ", 1)[0]))
    print("# refused starts: %s; started at ulimit -v %sM" % (said, started))
    check(started, "the daemon did not start under ulimit -v 64M")
    check(any(rc == 71 for _, rc, _ in said),
          "no start was refused for its address space (EX_OSERR): %s" % said)

    # 2. Under 128 MB, new streams until they no longer fit.
    d, rc, log = start_under(env, "load", 128 * 1024)
    check(rc is None, "no start under ulimit -v 128M: exit %s: %s" % (rc, log[-300:]))
    try:
        sock = env.pusher(d.ingest)
        sock.setsockopt(zmq.SNDTIMEO, 2000)
        offered = 0
        for i in range(20000):
            try:
                sock.send(env.batch("v/%05d" % i, 0, [1.0] * 100))
                offered += 1
            except zmq.Again:
                break
        # every message read, or (over budget from the start, e.g. a build whose
        # libraries map more, such as CUDA's) the guard cutting the sender's new
        # connections: then what it read stops growing
        seen = [-1, time.monotonic()]

        def settled():
            n = d.status()["counters"]["messages"]
            if n != seen[0]:
                seen[:] = [n, time.monotonic()]
            return n >= offered or time.monotonic() - seen[1] > 2.0
        wait_until(settled, 60, "the messages to be read", step=0.1)
        st = d.status()
        c = st["counters"]
        refused = st["rejected"].get("memory", 0) + st["rejected"].get("stream_refused", 0)
        print("# ulimit -v 128M: %d streams offered, %d taken, %d refused (memory %d); "
              "address space %d MB" % (offered, len(st["streams"]), refused,
                                       st["rejected"].get("memory", 0),
                                       c["address_space_bytes"] // MB))
        check(d.proc.poll() is None, "tsmined died: exit %s" % d.proc.poll())
        check(refused > 0 and st["rejected"].get("memory", 0) > 0,
              "no stream was refused for memory: %s" % st["rejected"])
        check(timed_status(d) < CONTROL_BOUND_S, "control slow under memory pressure")
        # the guard keeps 1/8 of the limit (16 MB) for libzmq, which aborts when an
        # allocation fails: new streams count what they will take before they take it,
        # and the streams' storage grows only into that room's remainder
        print("# peak address space %.1f MB of 128 MB" % (peak_under_128m(d) / MB))
        stop_checkpointed(d, "under pressure")
    except Failure:
        d.dump_log()
        raise
    finally:
        d.kill()

    # 3. Under 128 MB, idle connections until the client runs out of descriptors:
    # each costs libzmq about 65 KB of address space before any message [about 1,000
    # aborted the daemon].
    d, rc, log = start_under(env, "connections", 128 * 1024)
    check(rc is None, "no start under ulimit -v 128M: exit %s: %s" % (rc, log[-300:]))
    socks = []
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        port = int(d.ingest.rsplit(":", 1)[1])
        for i in range(min(1500, soft - 64)):
            try:  # raw peers: one descriptor each, and no reconnection when cut
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
                s.sendall(greeting() + ready(b"PUSH"))
            except OSError:
                break  # the kernel's backlog is full: the daemon stopped accepting
            socks.append(s)
        want = len(socks)
        time.sleep(2.0)
        check(d.proc.poll() is None, "tsmined died under %d idle connections: exit %s"
              % (want, d.proc.poll()))
        check(timed_status(d) < CONTROL_BOUND_S, "control slow under %d connections" % want)
        c = counters(d)
        print("# ulimit -v 128M, %d idle connections: ingest share %d, %d cut; peak address "
              "space %.1f MB" % (want, c["connections_ingest_max"], c["peers_cut_connections"],
                                 peak_under_128m(d) / MB))
        for s in socks:
            s.close()
        socks = []
        stop_checkpointed(d, "after the connections")
    except Failure:
        d.dump_log()
        raise
    finally:
        for s in socks:
            s.close()
        d.kill()


# ---- budget --------------------------------------------------------------------------

def case_budget(env):
    if not RSS_BOUNDS:  # ASan's quarantine, a wrapper's shadow memory: RSS is theirs
        print("SKIP: the resident size is not the daemon's own under ASan or a wrapper")
        return 77
    # the daemon's own size first, then a budget a little above it
    with env.daemon("probe", params=SMALL) as d:
        base = counters(d)["resident_bytes"]
    budget = base + 24 * MB
    rng = random.Random(5)
    with env.daemon(params={"window": 2048, "subsequence": 32, "hop": 2048, "warmup": 300,
                            "motif": False},
                    limits={"memory_budget": budget, "checkpoint_interval": 3600,
                            "max_streams": 100000}) as d:
        # the known stream on a quiet connection of its own, made before the pressure:
        # the flood's connection may be shed (it holds the most) and, reconnecting,
        # cut as new while over budget, which would take a batch queued on it along
        sock, known = env.pusher(d.ingest), env.pusher(d.ingest)
        known.send(env.batch("known/0", 0, noise(rng, 2048)))
        d.wait_samples({"known/0": 2048})
        values = noise(rng, 2048)
        c0 = counters(d)
        n = 0
        while n < 3000 and not counters(d)["memory_pressure"]:
            for _ in range(20):
                sock.send(env.batch("new/%05d" % n, 0, values))
                n += 1
            time.sleep(0.05)
        check(counters(d)["memory_pressure"], "%d streams did not exceed a budget of %d MB" %
              (n, budget // MB))
        for _ in range(20):
            sock.send(env.batch("late/%05d" % n, 0, values))
            n += 1
        known.send(env.batch("known/0", 2048, noise(rng, 100)))
        wait_until(lambda: d.status()["rejected"].get("memory", 0) > 0, 10,
                   "a new stream refused for memory")
        d.wait_samples({"known/0": 2148})
        wait_until(lambda: counters(d)["checkpoints"] > c0["checkpoints"], 5,
                   "the checkpoint written when memory went over budget")
        late = env.pusher(d.ingest)  # a new connection while over budget
        late.send(env.batch("known/0", 2148, [1.0]))
        wait_until(lambda: counters(d)["peers_cut_connections"] > 0, 5, "the new peer cut")
        st = d.status()
        c = st["counters"]
        print("# budget %d MB (resident %d MB at start): over after %d new streams; refused "
              "(memory) %d; checkpoints %d; peers cut %d" %
              (budget // MB, base // MB, n - 20, st["rejected"]["memory"], c["checkpoints"],
               c["peers_cut_connections"]))
        check(timed_status(d) < CONTROL_BOUND_S, "control slow under memory pressure")
        late.close()
        known.close()


CASES = {"multipart": case_multipart, "flood": case_flood, "subscribe": case_subscribe,
         "curve_command": case_curve_command, "dealers": case_dealers,
         "descriptors": case_descriptors, "address_space": case_address_space,
         "budget": case_budget}


def main():
    return harness.run_cases(__doc__, CASES)


if __name__ == "__main__":
    sys.exit(main())
