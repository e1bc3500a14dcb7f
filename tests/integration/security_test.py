#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""security_test.py - CURVE authentication of tsmined (issue 5 item 1), through its real
interfaces: keys made by `tsmine keygen`, the daemon configured with
security.curve, pyzmq CURVE clients (and the `tsmine` companions) allowed or not, plain
clients, and raw TCP bytes.

    security_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases: allow (allowed clients' samples are counted; an unknown key, a plain client
and bogus handshakes are refused, counted, and add no sample), start (an empty or
unreadable allow-list, a malformed key file, a public key as the server's secret:
refuses to start, exit 78, naming the file), reload (an unreadable configuration, a
malformed or emptied allow-list on SIGHUP keep the daemon closed as before; a valid
allow-list is swapped in), allow_fifo (a FIFO, a socket, a device and a directory in
the allow-list directory are skipped with a warning: start and reload never block),
revoke (issue 17 item 8: a key removed at a reload loses its open connections: its
samples on the connection it already has are refused and counted, its subscriber
receives nothing more, its control requests get no answer; another key's samples and
alerts go on, and what that subscriber misses while it reconnects is measured),
owners (issue 17 item 4: with security.curve.stream_owners each key writes only the
streams its key file names; a batch of another stream is refused as not_owner; the
setting and the key files' streams apply at a reload). Exits 0, 1, or 77 when it
cannot run here.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types

import harness
from harness import Failure, check, wait_until, zmq


def read_key(path):
    """The Z85 keys of a zcert file: {'public-key': b'...', 'secret-key': b'...'}."""
    with open(path) as f:
        return {k: v.encode() for k, v in re.findall(r'(public-key|secret-key) = "(.{40})"',
                                                      f.read())}


class CurveCtx:
    """A zmq context whose sockets are CURVE clients with one key pair."""

    def __init__(self, zctx, client, server):
        self.zctx, self.client, self.server = zctx, read_key(client), read_key(server)

    def socket(self, kind):
        s = self.zctx.socket(kind)
        s.curve_serverkey = self.server["public-key"]
        s.curve_publickey = self.client["public-key"]
        s.curve_secretkey = self.client["secret-key"]
        return s


class CurveEnv:
    """The harness Env as a CURVE daemon's client sees it: the same, but its sockets
    (control requests, pushers) are CURVE clients."""

    def __init__(self, env, ctx):
        self._env, self.zctx = env, ctx

    def __getattr__(self, name):
        return getattr(self._env, name)

    pusher_linger_ms = 0  # a refused client's queue is never delivered: close at once
    pusher = harness.Env.pusher  # on this class's CURVE zctx


class SecureDaemon(harness.Daemon):
    """A harness Daemon with security.curve on (keys in its directory); owners: the
    value of security.curve.stream_owners (None: left out)."""

    def __init__(self, env, workdir, secret, allow_dir, owners=None, **kw):
        super().__init__(env, workdir, **kw)
        self.secret, self.allow_dir, self.owners = secret, allow_dir, owners

    def write_config(self):
        super().write_config()
        owners = "" if self.owners is None else " stream_owners = %s;" % harness.conf_value(
            self.owners)
        with open(self.conf, "a") as f:
            f.write("security = { curve = { secret_key_file = %s; authorized_keys = %s;%s }; };\n"
                    % (json.dumps(self.secret), json.dumps(self.allow_dir), owners))


class Keys:
    """server, alice (allowed), mallory (not) and bob (allowed on reload) under dir;
    carol too when asked."""

    def __init__(self, env, top, more=()):
        self.dir = os.path.join(top, "keys")
        os.makedirs(self.dir)
        for name in ("server", "alice", "mallory", "bob") + tuple(more):
            p = env.tsmine_run("keygen", os.path.join(self.dir, name))
            check(json.loads(p.stdout)["public_file"].endswith(name + ".key"), "keygen output")
        mode = os.stat(self.path("alice", "_secret")).st_mode & 0o777
        check(mode == 0o600, "keygen: the secret key file has mode %o" % mode)
        self.allow = os.path.join(top, "allow")
        os.makedirs(self.allow)
        shutil.copy(self.path("alice"), self.allow)

    def path(self, name, suffix=""):
        return os.path.join(self.dir, name + ".key" + suffix)

    def ctx(self, env, name):
        return CurveCtx(env.zctx, self.path(name, "_secret"), self.path("server"))

    def cli(self, name):
        return ["--curve-key", self.path(name, "_secret"), "--server-key", self.path("server")]


    def allow_with_streams(self, name, streams):
        """Copies name.key into the allow-list with a metadata `streams` entry (None:
        none), as an operator edits it."""
        with open(self.path(name)) as f:
            text = f.read()
        if streams is not None:
            text = text.replace("metadata\n", "metadata\n    streams = %s\n" % json.dumps(streams),
                                1)
        dst = os.path.join(self.allow, name + ".key")
        with open(dst + ".tmp", "w") as f:
            f.write(text)
        os.replace(dst + ".tmp", dst)


def secure_daemon(env, keys, name="d", allow_dir=None, **kw):
    d = os.path.join(env.dir, name)
    os.makedirs(d, exist_ok=True)
    return SecureDaemon(CurveEnv(env, keys.ctx(env, "alice")), d, keys.path("server", "_secret"),
                        allow_dir or keys.allow, **kw)


def counters(d):
    return d.status()["counters"]


def try_push(env, ctx, endpoint, stream, n=100, wait=1.0):
    """A fresh client of ctx (a CurveCtx, or the plain context) pushes n samples."""
    s = ctx.socket(zmq.PUSH)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    s.send(env.batch(stream, 0, [float(k % 7) for k in range(n)]), zmq.DONTWAIT)
    time.sleep(wait)
    s.close()


def raw_tcp(port, data):
    """Connects, sends data, reads until the daemon closes (or 2 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
        c.sendall(data)
        try:
            while c.recv(4096):
                pass
        except (socket.timeout, ConnectionResetError):
            pass


def case_allow(env):
    keys = Keys(env, env.dir)
    with secure_daemon(env, keys) as d:  # its status requests are alice's
        port = d.ports[0]
        c0 = counters(d)
        check(c0["curve_authorized_keys"] == 1, "allow-list of 1 key: %s" % c0)
        # an allowed pyzmq client, and `tsmine replay` with alice's key
        sock = d.env.pusher(d.ingest)
        env.send_series(sock, "ok/py", [float(k % 13) for k in range(500)], batch=100)
        path = os.path.join(env.dir, "s.txt")
        with open(path, "w") as f:
            f.write("\n".join(str(k % 11) for k in range(300)) + "\n")
        env.tsmine_run("replay", "--endpoint", d.ingest, "--stream", "ok/cli", *keys.cli("alice"),
                       path)
        d.wait_samples({"ok/py": 500, "ok/cli": 300})
        st = json.loads(env.tsmine_run("status", "--endpoint", d.control,
                                       *keys.cli("alice")).stdout)
        check(st["streams"]["ok/cli"]["samples"] == 300, "tsmine status with CURVE: %s" % st)
        check(st["counters"]["curve_handshakes"] >= 3, "handshakes counted: %s" % st["counters"])

        # refused: an unknown key, a plain client, bogus handshakes
        before = counters(d)
        try_push(env, keys.ctx(env, "mallory"), d.ingest, "bad/mallory")
        wait_until(lambda: counters(d)["curve_rejected_key"] > before["curve_rejected_key"], 10,
                   "an unknown key to be counted")
        try_push(env, env.zctx, d.ingest, "bad/plain")
        refused = lambda c: c["curve_rejected_protocol"] + c["curve_rejected_other"]
        wait_until(lambda: refused(counters(d)) > refused(before), 10,
                   "a plain client to be counted")
        mid = counters(d)
        # a ZMTP 3.0 greeting that announces CURVE, then garbage for its HELLO
        greeting = b"\xff" + b"\0" * 8 + b"\x7f\x03\x00" + b"CURVE".ljust(20, b"\0") + b"\0" * 32
        raw_tcp(port, greeting + b"\x04\x29\x05HELLO" + os.urandom(200))
        wait_until(lambda: refused(counters(d)) > refused(mid), 10,
                   "a bogus CURVE handshake to be counted")
        # random bytes: libzmq drops the connection (no ZMTP signature, no event)
        for seed in range(3):
            raw_tcp(port, bytes((k * 7 + seed * 31) % 256 for k in range(1000)))
        # a plain subscriber and a plain control client get nothing
        sub = env.zctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(d.alerts)
        p = env.tsmine_run("status", "--endpoint", d.control, "--timeout-ms", "500",
                           check_rc=False)
        check(p.returncode == 69, "a plain `tsmine status` got an answer (exit %d)" % p.returncode)
        p = env.tsmine_run("status", "--endpoint", d.control, "--timeout-ms", "500",
                           *keys.cli("mallory"), check_rc=False)
        check(p.returncode == 69, "mallory's `tsmine status` got an answer")
        # an allowed client still flows; the refused ones added no stream, no sample
        env.send_series(sock, "ok/py", [float(k % 5) for k in range(100)], batch=100,
                        first_seq=500)
        st = d.wait_samples({"ok/py": 600, "ok/cli": 300})
        check(sorted(st) == ["ok/cli", "ok/py"], "streams from refused clients: %s" % sorted(st))
        check(sum(s["samples"] for s in st.values()) == 900, "samples: %s" % st)
        check(not sub.poll(100), "a plain subscriber received something")
        sub.close()
        sock.close()
        c = counters(d)
        print("# counters: %s" % {k: v for k, v in c.items() if k.startswith("curve")})
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")


def case_start(env):
    keys = Keys(env, env.dir)
    empty = os.path.join(env.dir, "empty")
    bad = os.path.join(env.dir, "bad")
    os.makedirs(empty)
    os.makedirs(bad)
    shutil.copy(keys.path("alice"), bad)
    with open(os.path.join(bad, "broken.key"), "w") as f:
        f.write("curve\n    public-key = \"too-short\"\n")
    streams_bad = os.path.join(env.dir, "streams_bad")
    os.makedirs(streams_bad)
    with open(keys.path("alice")) as f:
        text = f.read()
    with open(os.path.join(streams_bad, "s.key"), "w") as f:
        f.write(text.replace("metadata\n", "metadata\n    streams = \"%s\"\n" % ("x" * 129), 1))
    cases = [
        (empty, None, "empty: no key files"),
        (os.path.join(env.dir, "missing"), None, "missing: cannot read the directory"),
        (keys.path("alice"), None, "alice.key: cannot read the directory: Not a directory"),
        (bad, None, "broken.key:2: public-key: expected 40 Z85 characters"),
        (keys.allow, keys.path("server"), "server.key: no curve secret-key"),
        (streams_bad, None, "s.key:8: streams: a pattern longer than 128 bytes"),
    ]
    for i, (allow, secret, want) in enumerate(cases):
        d = secure_daemon(env, keys, name="d%d" % i, allow_dir=allow)
        if secret:
            d.secret = secret
        d.ports = harness.free_ports(3)
        d.start(wait=False)
        try:
            rc = d.proc.wait(20)
        except subprocess.TimeoutExpired:
            d.kill()
            raise Failure("case %d: tsmined started with %s" % (i, allow))
        d.log.close()
        with open(d.log_path) as f:
            log = f.read()
        check(rc == 78, "case %d: exit %d, expected 78 (EX_CONFIG)" % (i, rc))
        check(want in log, "case %d: the log lacks %r:\n%s" % (i, want, log))


def case_reload(env):
    keys = Keys(env, env.dir)
    with secure_daemon(env, keys) as d:
        bob = keys.ctx(env, "bob")
        # an unreadable configuration: the reload fails, the daemon stays closed
        os.rename(d.conf, d.conf + ".away")
        d.signal(signal.SIGHUP)
        wait_until(lambda: counters(d)["reloads"] >= 1, 10, "the reload")
        check(d.proc.poll() is None, "tsmined exited on a reload of an unreadable file")
        try_push(env, keys.ctx(env, "mallory"), d.ingest, "bad/after-unreadable")
        try_push(env, env.zctx, d.ingest, "bad/plain-after-unreadable")
        os.rename(d.conf + ".away", d.conf)
        # bob's key with a malformed file: refused as a whole, bob still out
        shutil.copy(keys.path("bob"), keys.allow)
        with open(os.path.join(keys.allow, "zz.key"), "w") as f:
            f.write("not a key\n")
        d.signal(signal.SIGHUP)
        wait_until(lambda: counters(d)["reloads"] >= 2, 10, "the second reload")
        try_push(env, bob, d.ingest, "bad/bob-early")
        check(counters(d)["curve_authorized_keys"] == 1, "a malformed allow-list was swapped in")
        # an emptied directory: refused too (alice, the status client, still gets in)
        for name in os.listdir(keys.allow):
            os.unlink(os.path.join(keys.allow, name))
        d.signal(signal.SIGHUP)
        wait_until(lambda: counters(d)["reloads"] >= 3, 10, "the third reload")
        check(counters(d)["curve_authorized_keys"] == 1, "an empty allow-list was swapped in")
        st = d.status()["streams"]
        check(not st, "refused clients created streams: %s" % sorted(st))
        # a valid one: alice and bob
        shutil.copy(keys.path("alice"), keys.allow)
        shutil.copy(keys.path("bob"), keys.allow)
        d.signal(signal.SIGHUP)
        wait_until(lambda: counters(d)["curve_authorized_keys"] == 2, 10, "the valid allow-list")
        s = bob.socket(zmq.PUSH)
        s.setsockopt(zmq.LINGER, 2000)
        s.connect(d.ingest)
        env.send_series(s, "ok/bob", [float(k % 9) for k in range(200)], batch=100)
        d.wait_samples({"ok/bob": 200})
        s.close()
        check(sorted(d.status()["streams"]) == ["ok/bob"], "streams: %s" %
              sorted(d.status()["streams"]))
        with open(d.log_path) as f:
            log = f.read()
        check("keeping the running configuration and allow-list" in log,
              "the refused reloads are not logged")


def reload_and_wait(d, n):
    """SIGHUP, then waits until the daemon has counted its n-th reload (done or
    refused: either way it is finished when the counter moves)."""
    d.signal(signal.SIGHUP)
    wait_until(lambda: counters(d)["reloads"] >= n, 10, "reload %d" % n)


def case_allow_fifo(env):
    """Non-regular entries of the allow-list directory are skipped with a warning, so a
    FIFO (whose open would block for a writer) never hangs start-up or a reload."""
    keys = Keys(env, env.dir)
    os.mkfifo(os.path.join(keys.allow, "fifo.key"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.path.join(keys.allow, "sock.key"))
    os.symlink("/dev/zero", os.path.join(keys.allow, "zero.key"))
    os.makedirs(os.path.join(keys.allow, "sub.key"))
    t0 = time.monotonic()
    with secure_daemon(env, keys) as d:
        took = time.monotonic() - t0
        c = counters(d)
        check(c["curve_authorized_keys"] == 1, "allow-list: %s" % c)
        reload_and_wait(d, 1)
        check(counters(d)["reload_failures"] == 0, "the reload failed")
        s = d.env.pusher(d.ingest)
        env.send_series(s, "ok/alice", [float(k % 7) for k in range(100)], batch=50)
        d.wait_samples({"ok/alice": 100})
        s.close()
        with open(d.log_path) as f:
            log = f.read()
        for what in ("fifo.key: not a regular file (a FIFO)",
                     "sock.key: not a regular file (a socket)",
                     "zero.key: not a regular file (a character device)"):
            check(log.count(what) == 2, "the log names %r %d times, not 2 (start, reload)"
                  % (what, log.count(what)))
        check("sub.key" not in log, "a subdirectory was reported")
        print("# started (control answering) in %.2f s with a FIFO, a socket and a device "
              "in the allow-list" % took)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
    sock.close()


class Feed:
    """A thread that sends batches of 10 samples of one stream every 20 ms on one
    long-lived PUSH connection (sock), with a gap of 10 before each batch when gaps is
    set (each gap is a GAP alert). sent: samples sent."""

    def __init__(self, env, sock, stream, gaps):
        self.env, self.sock, self.stream, self.gaps = env, sock, stream, gaps
        self.sent, self.seq, self.stop_flag = 0, 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag:
            try:
                self.sock.send(self.env.batch(self.stream, self.seq,
                                              [float(k % 7) for k in range(10)]), zmq.DONTWAIT)
                self.sent += 10
            except zmq.Again:  # not connected (any more): queued nowhere
                pass
            self.seq += 20 if self.gaps else 10
            time.sleep(0.02)

    def stop(self):
        self.stop_flag = True
        self.thread.join()


def case_revoke(env):
    """Revocation cuts open sessions (issue 17 item 8)."""
    keys = Keys(env, env.dir)
    shutil.copy(keys.path("bob"), keys.allow)
    alice, bob = keys.ctx(env, "alice"), keys.ctx(env, "bob")
    with secure_daemon(env, keys) as d:
        sub = {n: harness.Subscriber(types.SimpleNamespace(zctx=c, pb=env.pb), d.alerts)
               for n, c in (("alice", alice), ("bob", bob))}
        push = {}
        for n, c in (("alice", alice), ("bob", bob)):
            push[n] = c.socket(zmq.PUSH)
            push[n].setsockopt(zmq.LINGER, 0)
            push[n].connect(d.ingest)
        feeds = {"alice": Feed(env, push["alice"], "a/gaps", True),
                 "bob": Feed(env, push["bob"], "b/gaps", True)}
        # bob's control connection, open before the reload (REQ: one request at a time)
        ctl = bob.socket(zmq.REQ)
        ctl.setsockopt(zmq.LINGER, 0)
        ctl.connect(d.control)
        req = env.pb.ControlRequest(schema_version=1,
                                    command=env.pb.ControlRequest.STATUS).SerializeToString()
        ctl.send(req)
        check(ctl.poll(5000 * harness.SLOW), "bob's control request got no answer before")
        ctl.recv()
        try:
            wait_until(lambda: all(len(s.get()) >= 20 for s in sub.values()), 20,
                       "both subscribers to receive alerts")
            st = d.status()["streams"]
            check(st["b/gaps"]["samples"] > 0, "bob's samples: %s" % st)
            # bob's key leaves the allow-list
            os.unlink(os.path.join(keys.allow, "bob.key"))
            t_hup = time.time()
            reload_and_wait(d, 1)
            t_done = time.time()
            # the reload is done when the status that counts it is answered (the same
            # thread): every message of bob's read from now on is refused
            st0 = d.status()
            c0 = st0["counters"]
            bob_samples = st0["streams"]["b/gaps"]["samples"]
            alice_samples = st0["streams"]["a/gaps"]["samples"]
            check(c0["curve_authorized_keys"] == 1 and c0["reload_failures"] == 0,
                  "the reload: %s" % c0)
            ctl.send(req)  # on the connection bob has
            time.sleep(0.3)  # alerts sent before the cut reach bob's socket by now
            n_bob, n_alice = len(sub["bob"].get()), len(sub["alice"].get())
            time.sleep(2.0)  # both feeds go on sending, on the connections they had
            ctl_answered = ctl.poll(0)
            ctl.close()
            p = env.tsmine_run("status", "--endpoint", d.control, "--timeout-ms", "1000",
                               *keys.cli("bob"), check_rc=False)
            st = d.status()
        finally:
            for f in feeds.values():
                f.stop()
        c1 = st["counters"]
        late_bob = [a for _, a in sub["bob"].get() if a.detected_at_ns > t_done * 1e9]
        got_bob = len(sub["bob"].get()) - n_bob
        got_alice = len(sub["alice"].get()) - n_alice
        # what alice's subscriber missed: the seq numbers of a/gaps it did not receive
        # between its last alert before the reload and its first after
        seqs = sorted(a.seq for t, a in sub["alice"].get() if t == "a/gaps")
        missed = sum(b - a - 1 for a, b in zip(seqs, seqs[1:]) if b - a > 1)
        before = [a for _, a in sub["alice"].get() if a.detected_at_ns < t_hup * 1e9]
        after = [a for _, a in sub["alice"].get() if a.detected_at_ns > t_done * 1e9]
        print("# after the reload (%.3f s): bob: %d samples accepted, %d alerts received "
              "(%d detected after it), control request on its connection answered: %s, new "
              "`tsmine status` exit %d; alice: %+d samples, %d alerts, %d missed by her "
              "subscriber while it reconnected (first alert after the reload %.3f s after "
              "it); counters %s" % (
                  t_done - t_hup, st["streams"]["b/gaps"]["samples"] - bob_samples, got_bob,
                  len(late_bob), bool(ctl_answered), p.returncode,
                  st["streams"]["a/gaps"]["samples"] - alice_samples, got_alice, missed,
                  (min(a.detected_at_ns for a in after) / 1e9 - t_done) if after else -1,
                  {k: v for k, v in c1.items() if k.startswith("curve") or k == "reloads"}))
        print("# rejected: %s" % st["rejected"])
        for s in sub.values():
            s.close()
        for s in push.values():
            s.close()
        check(st["streams"]["b/gaps"]["samples"] == bob_samples,
              "bob's samples after the reload were accepted: %d -> %d" %
              (bob_samples, st["streams"]["b/gaps"]["samples"]))
        check(not late_bob and got_bob == 0,
              "bob's subscriber received %d alerts after the reload, %d detected after it" %
              (got_bob, len(late_bob)))
        check(not ctl_answered, "bob's control request on its open connection was answered")
        check(p.returncode == 69, "bob's `tsmine status` got an answer (exit %d)" % p.returncode)
        check(st["rejected"].get("revoked", 0) >= 1 and c1["curve_revoked_messages"] >= 1,
              "bob's refused messages are not counted: %s" % c1)
        check(c1["curve_connections_cut"] >= 3,
              "connections cut: %d (bob's feed, both subscribers)" % c1["curve_connections_cut"])
        check(st["streams"]["a/gaps"]["samples"] - alice_samples >= 500,
              "alice's samples stalled after the reload")
        check(got_alice >= 50 and before and after, "alice's subscriber got %d alerts after "
              "the reload" % got_alice)
        check(missed <= 50, "alice's subscriber missed %d alerts" % missed)
        with open(d.log_path) as f:
            log = f.read()
        check("1 removed" in log, "the reload does not say a key was removed")
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")


def case_owners(env):
    """security.curve.stream_owners: a key writes only the streams its file names."""
    keys = Keys(env, env.dir, more=("carol",))
    keys.allow_with_streams("alice", "a/*")
    keys.allow_with_streams("bob", "b/*, shared")
    keys.allow_with_streams("carol", None)  # names no streams: writes none

    def push(name, stream, first_seq=0, n=20):
        s = keys.ctx(env, name).socket(zmq.PUSH)
        s.setsockopt(zmq.LINGER, 2000)
        s.connect(d.ingest)
        s.send(env.batch(stream, first_seq, [float(k % 5) for k in range(n)]))
        s.close()

    with secure_daemon(env, keys, owners=True) as d:
        for name, stream in (("alice", "a/1"), ("alice", "b/1"), ("alice", "shared"),
                             ("bob", "b/1"), ("bob", "shared"), ("bob", "a/2"),
                             ("carol", "c/1")):
            push(name, stream)
        wait_until(lambda: d.status()["rejected"].get("not_owner", 0) >= 4, 10,
                   "4 batches refused as not_owner")
        st = d.wait_samples({"a/1": 20, "b/1": 20, "shared": 20})
        check(sorted(st) == ["a/1", "b/1", "shared"], "streams: %s" % sorted(st))
        check(d.status()["rejected"]["not_owner"] == 4, "not_owner: %s" % d.status()["rejected"])
        # the owners apply at a reload: the key files' streams, and the setting
        keys.allow_with_streams("alice", "a/*, b/2")
        reload_and_wait(d, 1)
        push("alice", "b/2")
        push("alice", "b/3")
        wait_until(lambda: d.status()["rejected"]["not_owner"] >= 5, 10, "b/3 refused")
        d.wait_samples({"b/2": 20})
        check("b/3" not in d.status()["streams"], "alice wrote b/3")
        d.owners = False
        d.write_config()
        reload_and_wait(d, 2)
        push("carol", "c/1")
        d.wait_samples({"c/1": 20})
        check(d.status()["rejected"]["not_owner"] == 5, "not_owner counted with owners off")
        # a malformed streams entry refuses the reload as a whole (owners stay off)
        with open(os.path.join(keys.allow, "carol.key"), "a") as f:
            f.write("metadata\n    streams = \"x, , y\"\n")
        reload_and_wait(d, 3)
        check(counters(d)["reload_failures"] == 1, "a malformed streams entry was accepted")
        with open(d.log_path) as f:
            log = f.read()
        check("carol.key:" in log and "streams: an empty pattern" in log,
              "the log does not name the malformed streams entry")
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")


CASES = {f.__name__[5:]: f for f in (case_allow, case_start, case_reload, case_allow_fifo,
                                     case_revoke, case_owners)}


def main():
    if not zmq.has("curve"):
        print("SKIP: this pyzmq's libzmq has no CURVE")
        return 77
    return harness.run_cases(__doc__, CASES)


if __name__ == "__main__":
    sys.exit(main())
