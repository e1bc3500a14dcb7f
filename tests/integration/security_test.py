#!/usr/bin/env python3
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
the allow-list directory are skipped with a warning: start and reload never block).
Exits 0, 1, or 77 when it cannot run here.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

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
    """A harness Daemon with security.curve on (keys in its directory)."""

    def __init__(self, env, workdir, secret, allow_dir, **kw):
        super().__init__(env, workdir, **kw)
        self.secret, self.allow_dir = secret, allow_dir

    def write_config(self):
        super().write_config()
        with open(self.conf, "a") as f:
            f.write("security = { curve = { secret_key_file = %s; authorized_keys = %s; }; };\n"
                    % (json.dumps(self.secret), json.dumps(self.allow_dir)))


class Keys:
    """server, alice (allowed), mallory (not) and bob (allowed on reload) under dir."""

    def __init__(self, env, top):
        self.dir = os.path.join(top, "keys")
        os.makedirs(self.dir)
        for name in ("server", "alice", "mallory", "bob"):
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


def secure_daemon(env, keys, name="d", allow_dir=None):
    d = os.path.join(env.dir, name)
    os.makedirs(d, exist_ok=True)
    return SecureDaemon(CurveEnv(env, keys.ctx(env, "alice")), d, keys.path("server", "_secret"),
                        allow_dir or keys.allow)


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
    cases = [
        (empty, None, "empty: no key files"),
        (os.path.join(env.dir, "missing"), None, "missing: cannot read the directory"),
        (keys.path("alice"), None, "alice.key: cannot read the directory: Not a directory"),
        (bad, None, "broken.key:2: public-key: expected 40 Z85 characters"),
        (keys.allow, keys.path("server"), "server.key: no curve secret-key"),
    ]
    for i, (allow, secret, want) in enumerate(cases):
        d = secure_daemon(env, keys, name="d%d" % i, allow_dir=allow)
        if secret:
            d.secret = secret
        d.ports = (harness.free_port(), harness.free_port(), harness.free_port())
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


CASES = {f.__name__[5:]: f for f in (case_allow, case_start, case_reload, case_allow_fifo)}


def main():
    if not zmq.has("curve"):
        print("SKIP: this pyzmq's libzmq has no CURVE")
        return 77
    return harness.run_cases(__doc__, CASES)


if __name__ == "__main__":
    sys.exit(main())
