# SPDX-License-Identifier: Apache-2.0
"""harness.py - what every integration test of tsmined needs: a real daemon on free
loopback ports with a temporary configuration and state directory, an independent
ZeroMQ + protobuf client (code generated from proto/tsmine.proto by protoc at run
time, not the C code under test), an alert subscriber, and the `tsmine` tool.

The daemon is always killed at teardown (a `with Daemon(...)` block), its stderr is
kept in a log file and printed when a test fails. Python 3 standard library plus
pyzmq and google.protobuf (Debian: python3-zmq, python3-protobuf).
"""

import importlib
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    import zmq
except ImportError as e:  # e.g. a GPU machine without Debian's python3-zmq
    print("SKIP: this python3 cannot import zmq (%s); install python3-zmq" % e)
    sys.exit(77)


# TSMINE_DAEMON_WRAPPER: a command that runs tsmined (e.g. "valgrind --leak-check=full
# --track-fds=yes --error-exitcode=99"); with it every daemon is stopped by SIGTERM at
# the end of its block and its report checked (Daemon.wrapper_problem), and the start
# and stop timeouts are TSMINE_WRAPPER_SLOWDOWN (default 10) times longer.
WRAPPER = os.environ.get("TSMINE_DAEMON_WRAPPER", "").split()
WRAPPER_RC = int(os.environ["TSMINE_WRAPPER_ERROR_RC"]) if os.environ.get(
    "TSMINE_WRAPPER_ERROR_RC") else None
SLOW = float(os.environ.get("TSMINE_WRAPPER_SLOWDOWN", "10")) if WRAPPER else 1.0
# How much slower than a plain build the daemon runs here: SLOW, and three times under
# ASan (ASAN_OPTIONS set, tools/dev test --sanitize). Bounds on response times stretch
# by it: there they measure the sanitizer, not the design.
SLOWER = SLOW * (3.0 if os.environ.get("ASAN_OPTIONS") else 1.0)


class Failure(Exception):
    """A failed check; the runner prints it and exits 1."""


def check(cond, what):
    if not cond:
        raise Failure(what)


def load_pb2(protoc, proto, outdir):
    """Generates tsmine_pb2.py from the .proto file into outdir and imports it."""
    subprocess.run([protoc, "--proto_path=" + os.path.dirname(proto), "--python_out=" + outdir,
                    proto], check=True)
    sys.path.insert(0, outdir)
    try:
        return importlib.import_module("tsmine_pb2")
    except ImportError as e:  # no google.protobuf for this python3
        print("SKIP: the generated tsmine_pb2 does not import (%s); install python3-protobuf" % e)
        sys.exit(77)


def free_port():
    """A loopback TCP port nobody listens on now (the daemon binds it a moment later;
    Daemon.start retries with fresh ports when that race is lost)."""
    return free_ports(1)[0]


def free_ports(n):
    """n distinct free loopback ports: the sockets stay bound until all are picked, or
    the kernel may hand the same port out twice (the daemon then refuses a configuration
    that binds one endpoint twice, exit 78, seen once in CI)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return tuple(s.getsockname()[1] for s in socks)
    finally:
        for s in socks:
            s.close()


def wait_until(cond, timeout, what, step=0.02):
    """Polls cond() until it returns a true value (returned) or timeout seconds pass;
    SLOW times longer under a wrapper (every such deadline is about speed only)."""
    timeout *= SLOW
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise Failure("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(step)


def conf_value(v):
    """A Python value in libconfig syntax."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else '"auto"'
    if isinstance(v, int):
        return "%dL" % v if abs(v) > 2147483647 else str(v)
    if isinstance(v, list):
        return "[" + ", ".join(conf_value(x) for x in v) + "]"
    raise TypeError(v)


def conf_group(d):
    return "{ " + " ".join("%s = %s;" % (k, conf_value(v)) for k, v in d.items()) + " }"


class Daemon:
    """A tsmined on free loopback ports. params: streams.default; overrides: a list of
    (pattern, dict) pairs; limits: the limits group; groups: more top-level groups
    ({name: dict}, e.g. {"alertmanager": {...}}). Use as a context manager."""

    def __init__(self, env, workdir, params=None, overrides=(), limits=None, extra_env=None,
                 alerts=None, backend="cpu", groups=None, extra=None):
        self.env = env
        self.dir = workdir
        self.state_dir = os.path.join(workdir, "state")
        os.makedirs(self.state_dir, exist_ok=True)
        self.conf = os.path.join(workdir, "tsmined.conf")
        self.log_path = os.path.join(workdir, "tsmined.log")
        self.params = dict(params or {})
        self.overrides = list(overrides)
        self.limits = dict(limits or {})
        self.extra_env = dict(extra_env or {})
        self.alerts_opts = dict(alerts or {})  # more keys of the alerts group (e.g. hwm)
        self.backend = backend
        self.groups = dict(groups or {})
        self.extra = extra  # more groups: a function of the daemon -> config lines (e.g. mqtt)
        self.proc = None
        self.ports = None

    # -- configuration ---------------------------------------------------------------
    def write_config(self):
        ingest, alerts, control = self.ports
        lines = [
            "ingest = { endpoints = [ \"tcp://127.0.0.1:%d\" ]; };" % ingest,
            "alerts = %s;" % conf_group(dict([("endpoint", "tcp://127.0.0.1:%d" % alerts)] +
                                             list(self.alerts_opts.items()))),
            "control = { endpoint = \"tcp://127.0.0.1:%d\"; };" % control,
            "metrics = { listen = \"\"; };",
            "state_dir = %s;" % conf_value(self.state_dir),
            "backend = %s;" % conf_value(self.backend),
            "threads = 2;",
        ]
        if self.limits:
            lines.append("limits = %s;" % conf_group(self.limits))
        lines += ["%s = %s;" % (k, conf_group(v)) for k, v in self.groups.items()]
        if self.extra:
            lines.extend(self.extra(self))
        streams = "streams = { default = %s;" % conf_group(self.params)
        if self.overrides:
            streams += " overrides = ( %s );" % ", ".join(
                conf_group(dict([("match", pat)] + list(p.items()))) for pat, p in self.overrides)
        lines.append(streams + " };")
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.conf)

    @property
    def ingest(self):
        return "tcp://127.0.0.1:%d" % self.ports[0]

    @property
    def alerts(self):
        return "tcp://127.0.0.1:%d" % self.ports[1]

    @property
    def control(self):
        return "tcp://127.0.0.1:%d" % self.ports[2]

    # -- process ---------------------------------------------------------------------
    def start(self, timeout=20, wait=True):
        """Starts tsmined (new ports on the first start only) and waits until its control
        socket answers (unless not wait). Retries with fresh ports when it exits at once
        (a port taken)."""
        timeout *= SLOW
        for attempt in range(3):
            if self.ports is None or attempt > 0:
                self.ports = free_ports(3)
            self.write_config()
            env = dict(os.environ)
            env.update(self.extra_env)
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            self.log = open(self.log_path, "a")
            self.log.write("---- start %d: %s -c %s --foreground\n" % (attempt, self.env.tsmined,
                                                                       self.conf))
            self.log.flush()
            self.proc = subprocess.Popen(WRAPPER + [self.env.tsmined, "-c", self.conf,
                                                    "--foreground"],
                                         stdin=subprocess.DEVNULL, stdout=self.log,
                                         stderr=self.log, env=env)
            if not wait:
                return self
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if self.proc.poll() is not None:
                    break
                if self.status(timeout_ms=200, fail=False) is not None:
                    return self
            if self.proc.poll() is None:
                raise Failure("tsmined did not answer on %s within %d s" % (self.control, timeout))
            self.log.close()
            if self.ports_taken():
                continue  # lost the race for a port: try fresh ones
            raise Failure("tsmined exited with status %d at start" % self.proc.returncode)
        raise Failure("tsmined could not bind free ports three times")

    def ports_taken(self):
        with open(self.log_path) as f:
            text = f.read().lower()
        return "address already in use" in text or "eaddrinuse" in text

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=20):
        """SIGTERM, then waits; returns the exit status."""
        timeout *= SLOW
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("tsmined did not exit within %d s of SIGTERM" % timeout)
        self.log.close()
        return rc

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc and not self.log.closed:
            self.log.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if WRAPPER and exc[0] is None and self.proc and self.proc.poll() is None:
            self.stop(60)  # a clean exit, so that the wrapper reports (leaks, descriptors)
        self.kill()
        if exc[0] is not None:
            self.dump_log()
            return False
        if WRAPPER:
            problem = self.wrapper_problem()
            if problem:
                self.dump_log()
                raise Failure("under %s: %s" % (" ".join(WRAPPER), problem))
        return False

    def wrapper_problem(self):
        """What the wrapper (TSMINE_DAEMON_WRAPPER) found in this daemon's runs: an exit
        status of TSMINE_WRAPPER_ERROR_RC (valgrind --error-exitcode; errors and, with
        --errors-for-leak-kinds=definite, definite leaks), or valgrind's --track-fds report
        of a descriptor other than stdin/out/err still open at exit. None when clean."""
        if WRAPPER_RC is not None and self.proc.returncode == WRAPPER_RC:
            return "exit status %d: errors reported (see the log)" % WRAPPER_RC
        with open(self.log_path) as f:
            text = f.read()
        for line in text.splitlines():
            # valgrind 3.19: "==PID== FILE DESCRIPTORS: 5 open (3 std) at exit."
            if "FILE DESCRIPTORS:" in line and "open" in line:
                words = line.split("FILE DESCRIPTORS:")[1].split()
                if words[0] != words[2].lstrip("("):
                    return "descriptors left open at exit: %s" % line.strip()
        return None

    def dump_log(self):
        try:
            with open(self.log_path) as f:
                lines = f.readlines()
        except OSError:
            return
        sys.stdout.write("# ---- tsmined log (last 60 lines) ----\n")
        for line in lines[-60:]:
            sys.stdout.write("# " + line)

    # -- control socket --------------------------------------------------------------
    def request(self, command, stream_id="", timeout_ms=3000, fail=True):
        """One ControlRequest; returns the ControlReply (None on timeout when not fail)."""
        pb = self.env.pb
        timeout_ms = int(timeout_ms * SLOW)
        req = pb.ControlRequest(schema_version=1, command=command, stream_id=stream_id)
        s = self.env.zctx.socket(zmq.REQ)
        s.setsockopt(zmq.LINGER, 0)
        try:
            s.connect(self.control)
            s.send(req.SerializeToString())
            if not s.poll(timeout_ms):
                if fail:
                    raise Failure("no control reply within %d ms" % timeout_ms)
                return None
            reply = pb.ControlReply()
            reply.ParseFromString(s.recv())
            return reply
        finally:
            s.close()

    def status(self, timeout_ms=3000, fail=True):
        """The STATUS reply as a dict shaped like `tsmine status` prints it."""
        r = self.request(self.env.pb.ControlRequest.STATUS, timeout_ms=timeout_ms, fail=fail)
        if r is None:
            return None
        check(r.ok, "STATUS refused: %s" % r.error)
        streams = {}
        for s in r.streams:
            streams[s.stream_id] = {
                "samples": s.samples, "alerts": s.alerts, "next_seq": s.next_seq,
                "window_fill": s.window_fill, "window": s.window, "subsequence": s.subsequence,
                "hop": s.hop, "range": s.range, "subsequence_auto": s.subsequence_auto,
                "period": s.period, "warmup": s.warmup, "threshold": s.threshold,
                "calibrated": s.calibrated, "event_open": s.event_open, "events": s.events,
                "last_score": s.last_score, "gaps": s.gaps, "rejected": s.rejected}
        return {"streams": streams,
                "rejected": {c.name.lower(): c.value for c in r.rejected},
                "alerts_by_kind": {c.name: c.value for c in r.alerts_by_kind},
                "counters": {c.name: c.value for c in r.counters}}

    def wait_samples(self, expect, timeout=30):
        """Waits until every stream in expect ({id: samples}) has counted that many."""
        def done():
            st = self.status()["streams"]
            return all(st.get(k, {}).get("samples") == v for k, v in expect.items()) and st
        try:
            return wait_until(done, timeout, "the samples to be counted", step=0.05)
        except Failure:
            st = self.status()["streams"]
            bad = {k: (v, st.get(k, {}).get("samples")) for k, v in expect.items()
                   if st.get(k, {}).get("samples") != v}
            raise Failure("samples (sent, counted) differ for %d streams, e.g. %s"
                          % (len(bad), sorted(bad.items())[:5]))


class Env:
    """Paths of the programs under test and the shared ZeroMQ context and pb2 module."""

    def __init__(self, args, workdir):
        self.tsmined = args.tsmined
        self.tsmine = args.tsmine
        self.data = args.data
        self.dir = workdir
        gen = os.path.join(workdir, "gen")
        os.makedirs(gen, exist_ok=True)
        self.pb = load_pb2(args.protoc, args.proto, gen)
        self.zctx = zmq.Context()

    def close(self):
        self.zctx.destroy(linger=0)

    def daemon(self, name="d", **kw):
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        return Daemon(self, d, **kw)

    # -- publishing ------------------------------------------------------------------
    pusher_linger_ms = 5000  # how long closing a pusher may wait to deliver its queue

    def pusher(self, endpoint):
        s = self.zctx.socket(zmq.PUSH)
        s.setsockopt(zmq.LINGER, self.pusher_linger_ms)
        s.setsockopt(zmq.SNDTIMEO, 10000)
        s.connect(endpoint)
        return s

    def batch(self, stream, first_seq, values, period_ns=1000000, t0=1700000000000000000):
        b = self.pb.SampleBatch(schema_version=1, stream_id=stream, first_seq=first_seq,
                                first_timestamp_ns=t0 + first_seq * period_ns,
                                period_ns=period_ns, values=values)
        return b.SerializeToString()

    def send_series(self, sock, stream, values, batch=256, first_seq=0, pause=0.0):
        """Sends values as consecutive batches; returns the number of samples sent."""
        for i in range(0, len(values), batch):
            sock.send(self.batch(stream, first_seq + i, values[i:i + batch]))
            if pause:
                time.sleep(pause)
        return len(values)

    # -- the tool ----------------------------------------------------------------------
    def tsmine_run(self, *args, check_rc=True, timeout=60):
        p = subprocess.run([self.tsmine] + [str(a) for a in args], capture_output=True, text=True,
                           timeout=timeout)
        if check_rc and p.returncode != 0:
            raise Failure("tsmine %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode,
                                                     p.stderr.strip()))
        return p

    def cuda_unavailable(self):
        """None when the tools were built with CUDA and a GPU is present, else why not
        (the batch tool's own message for --backend cuda)."""
        path = os.path.join(self.dir, "probe.f64")
        with open(path, "wb") as f:
            f.write(struct.pack("<64d", *[math.sin(k) for k in range(64)]))
        p = self.tsmine_run("discord", "-m", 8, "-r", "0.5", "--backend", "cuda", path,
                            check_rc=False)
        return None if p.returncode == 0 else (p.stderr.strip() or "exit %d" % p.returncode)

    def discords(self, values, m, r, excl=None):
        """Range discords of values by the batch tool: [(index, distance, neighbor)]."""
        path = os.path.join(self.dir, "window.f64")
        with open(path, "wb") as f:
            f.write(struct.pack("<%dd" % len(values), *values))
        p = self.tsmine_run("discord", "-m", m, "-r", repr(r), "--excl", excl or m,
                            "--backend", "cpu", path)
        return [(o["index"], o["distance"], o["neighbor"])
                for o in map(json.loads, p.stdout.splitlines())]


class Subscriber:
    """Collects every alert of the given prefix in a background thread."""

    def __init__(self, env, endpoint, prefix=""):
        self.env = env
        self.alerts = []
        self.lock = threading.Lock()
        self.stop_flag = False
        self.sock = env.zctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVHWM, 0)
        self.sock.setsockopt_string(zmq.SUBSCRIBE, prefix)
        self.sock.connect(endpoint)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop_flag:
            try:
                if not self.sock.poll(50):
                    continue
                frames = self.sock.recv_multipart()
            except zmq.ZMQError:  # the context was torn down under a failed test
                return
            a = self.env.pb.Alert()
            a.ParseFromString(frames[-1])
            with self.lock:
                self.alerts.append((frames[0].decode(), a))

    def get(self):
        with self.lock:
            return list(self.alerts)

    def close(self):
        self.stop_flag = True
        self.thread.join()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def rel_close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


# ---- the detection semantics (DESIGN 5.3), for checking alerts ----------------------

DEFAULT_WARMUP = 300  # stream/params.h: tss_params_default


def warm(p):
    """Samples a (re)started window holds before it scores: max(warmup, 2 m)."""
    return max(p.get("warmup", DEFAULT_WARMUP), 2 * p["subsequence"])


def window_ends(n, p):
    """The sample counts (from the window's start, the stream's first sample when it has
    no gap) at which a stream's windowed passes run: once the window holds its warm-up
    and hop samples came since the start or the last pass: max(hop, warm), then every
    hop (stream/tick.c, plan)."""
    return list(range(max(p["hop"], warm(p)), n + 1, p["hop"]))


def zdist(x, i, j, m):
    """The z-normalised Euclidean distance of x[i:i+m] and x[j:j+m] (DESIGN 3: two
    constants are at 0, a constant and a non-constant at sqrt(m))."""
    a, b = x[i:i + m], x[j:j + m]
    ca, cb = max(a) == min(a), max(b) == min(b)
    if ca or cb:
        return 0.0 if ca and cb else math.sqrt(m)
    ma, mb = sum(a) / m, sum(b) / m
    sa = math.sqrt(sum((v - ma) ** 2 for v in a) / m)
    sb = math.sqrt(sum((v - mb) ** 2 for v in b) / m)
    corr = sum((u - ma) * (v - mb) for u, v in zip(a, b)) / (m * sa * sb)
    return math.sqrt(max(0.0, 2 * m * (1 - max(-1.0, min(1.0, corr)))))


def check_left_nn(x, a, window, where, tol=1e-6):
    """An alert's raw score (ANOMALY, ANOMALY_END's peak, LEFT_DISCORD) is the exact
    left-NN distance of its subsequence within the window when it completed (neighbours
    j <= start - m, j >= the window's first sample; x from the stream's first sample,
    no gap): its neighbour is at that distance and none is nearer (to tol relative; the
    online scores come from a recurrence)."""
    i, m = a.start_seq, a.length
    lo = max(0, i + m - window)
    check(lo <= i - m, "%s: subsequence %d has no left neighbour in the window" % (where, i))
    best = min(zdist(x, i, j, m) for j in range(lo, i - m + 1))
    check(lo <= a.neighbor_seq <= i - m, "%s: neighbour %d of %d outside [%d, %d]" %
          (where, a.neighbor_seq, i, lo, i - m))
    check(rel_close(zdist(x, i, a.neighbor_seq, m), a.distance, tol) and
          rel_close(best, a.distance, tol),
          "%s: subsequence %d: distance %.12g to %d, recomputed %.12g, nearest %.12g" %
          (where, i, a.distance, a.neighbor_seq, zdist(x, i, a.neighbor_seq, m), best))


class Event:
    """One anomaly event of a stream: [first, end) once closed (end None while open),
    opened and closed: the detected_seq of its ANOMALY and ANOMALY_END."""

    def __init__(self, anomaly):
        self.anomaly, self.end_alert = anomaly, None
        self.first, self.end = anomaly.start_seq, None
        self.opened, self.closed = anomaly.detected_seq, None

    def overlaps(self, a, b):
        return b > self.first and (self.end is None or a < self.end)


def events_of(pb, alerts, where):
    """The events of one stream's alerts (in the order they came), checking the grammar
    of DESIGN 5.3: an ANOMALY opens an event (its subsequence, detected as it
    completes); nothing opens another until one ANOMALY_END closes it with its extent
    [first, end) from the ANOMALY's start, and its peak inside that extent, scoring at
    least as high; events never overlap."""
    out = []
    for a in alerts:
        if a.kind == pb.ANOMALY:
            if out and out[-1].end is None:
                raise Failure("%s: ANOMALY at %d while the event at %d is open" %
                              (where, a.start_seq, out[-1].first))
            check(a.event_start_seq == a.start_seq and
                  a.event_end_seq == a.start_seq + a.length and
                  a.detected_seq == a.start_seq + a.length - 1,
                  "%s: ANOMALY %d: extent [%d, %d), detected %d" %
                  (where, a.start_seq, a.event_start_seq, a.event_end_seq, a.detected_seq))
            if out and a.start_seq < out[-1].end:
                raise Failure("%s: event at %d overlaps the one before, [%d, %d)" %
                              (where, a.start_seq, out[-1].first, out[-1].end))
            out.append(Event(a))
        elif a.kind == pb.ANOMALY_END:
            check(out and out[-1].end is None, "%s: ANOMALY_END at %d without an open event" %
                  (where, a.event_start_seq))
            e = out[-1]
            check(a.event_start_seq == e.first and a.event_end_seq >= e.first + a.length and
                  a.detected_seq >= a.event_end_seq - 1,
                  "%s: ANOMALY_END of the event at %d: extent [%d, %d), detected %d" %
                  (where, e.first, a.event_start_seq, a.event_end_seq, a.detected_seq))
            check(e.first <= a.start_seq and a.start_seq + a.length <= a.event_end_seq,
                  "%s: the peak %d of the event [%d, %d) lies outside it" %
                  (where, a.start_seq, a.event_start_seq, a.event_end_seq))
            check(a.score >= e.anomaly.score or a.distance >= e.anomaly.distance,
                  "%s: the peak of the event at %d scores %.6g, its ANOMALY %.6g" %
                  (where, e.first, a.score, e.anomaly.score))
            e.end, e.closed, e.end_alert = a.event_end_seq, a.detected_seq, a
    return out


def expected_discords(env, values, p, events, excl=None):
    """What DISCORD alerts a stream of values (from seq 0, no gap) with a fixed range
    p["range"] must produce (DESIGN 5.3; stream/passes.c): at each windowed pass, in
    order, the batch tool's range discords of that window, best first (the larger
    distance, then the smaller start), each published when it overlaps nothing the
    stream published before it (DISCORDs, events closed by the pass point) nor the
    event open at the pass point. events: the stream's events (events_of), as the
    daemon published them. Returns {start: (distance, neighbor)}."""
    m, out, spans = p["subsequence"], {}, []
    for e in window_ends(len(values), p):
        start, last = max(0, e - p["window"]), e - 1
        done = [(ev.first, ev.end) for ev in events if ev.closed is not None and ev.closed <= last]
        open_ = [ev.first for ev in events if ev.opened <= last and
                 (ev.closed is None or ev.closed > last)]
        found = sorted(env.discords(values[start:e], m, p["range"], excl),
                       key=lambda t: (-t[1], t[0]))
        for i, d, j in found:
            a, b = start + i, start + i + m
            if any(b > f for f in open_) or any(a < y and x < b for x, y in spans + done):
                continue
            spans.append((a, b))
            out[a] = (d, start + j)
    return out


def run_cases(doc, cases, seed=None):
    """The main() of an integration test file: parses the arguments tests/CMakeLists.txt
    passes (--case NAME, the programs, the .proto, the data folder, protoc, and
    --have-systemd: env.have_systemd), runs that
    case (a function of an Env) in a temporary folder and prints "ok - NAME" or
    "not ok - NAME: why (seed S)". Returns the exit status: 0, 1, or 77 when the case
    returns 77 (it cannot run here)."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--case", required=True, choices=sorted(cases))
    ap.add_argument("--tsmined", required=True)
    ap.add_argument("--tsmine", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--protoc", default="protoc")
    ap.add_argument("--have-systemd", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsmine-it-") as tmp:
        env = Env(args, tmp)
        env.have_systemd = bool(args.have_systemd)
        t0 = time.monotonic()
        try:
            rc = cases[args.case](env) or 0
        except Failure as e:
            print("not ok - %s: %s%s" % (args.case, e, "" if seed is None else
                                          " (seed %d)" % seed))
            return 1
        finally:
            env.close()
        if rc == 77:
            return rc
        print("ok - %s (%.1f s)" % (args.case, time.monotonic() - t0))
        return 0
