#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples_test.py - the example clients of examples/ (docs/protocol.md) against a real
tsmined: the alerts each publisher's planted anomaly causes reach each subscriber, every
one of them and nothing else, exactly as `tsmine detect` finds them in the same samples.

    examples_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR
                     --protoc PATH --examples DIR --example-bin DIR

--examples is the source folder (publisher.py, subscriber.py), --example-bin the folder
of the C examples' programs (tsmine-example-publisher, tsmine-example-subscriber).

Cases (the daemon's detection defaults; each publisher sends 4,000 samples, a noisy
sine with an anomaly at [2500, 2550)):
  python  publisher.py -> subscriber.py
  c       tsmine-example-publisher -> tsmine-example-subscriber
  mixed   both publishers, a stream each, -> both subscribers: the same lines in each
          (the C and Python encodings and decodings agree), and the two streams' alerts
          the same (the two publishers send the same values)
  curve   publisher.py and subscriber.py with --curve-key/--server-key against a daemon
          with security.curve: the alerts of `python`; a subscriber whose key the daemon
          does not know gives up (exit 69) and says it may have been refused

For each stream and subscriber: the alert lines (kind, seq, start, length, distance,
neighbour, score, event extent) equal those of `tsmine detect` over the same samples,
among them an ANOMALY whose subsequence overlaps the planted anomaly and its ANOMALY_END
whose extent covers it; seq runs 1, 2, 3, ... (no alert missed: the subscribers waited
for their subscription, docs/protocol.md "The PUB slow joiner"); STATUS counts as many.
Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time

import harness
from harness import Failure, check, wait_until

ARGS = {"--examples": None, "--example-bin": None}
PLANTED = (2500, 2550)


def take_args():
    """Removes this file's own options from sys.argv (run_cases parses the rest); --protoc
    stays, and is also given to the Python examples (PROTOC)."""
    argv = sys.argv[:1]
    it = iter(sys.argv[1:])
    for a in it:
        if a in ARGS:
            ARGS[a] = next(it)
        else:
            argv.append(a)
            if a == "--protoc":
                ARGS["--protoc"] = next(it)
                argv.append(ARGS["--protoc"])
    sys.argv = argv
    missing = [k for k in ("--examples", "--example-bin") if not ARGS[k]]
    if missing:
        sys.exit("examples_test.py: missing %s" % " ".join(missing))


def programs(lang):
    """The publisher and subscriber commands of one language."""
    if lang == "python":
        return ([sys.executable, os.path.join(ARGS["--examples"], "publisher.py")],
                [sys.executable, os.path.join(ARGS["--examples"], "subscriber.py")])
    return ([os.path.join(ARGS["--example-bin"], "tsmine-example-publisher")],
            [os.path.join(ARGS["--example-bin"], "tsmine-example-subscriber")])


def child_env():
    """The examples' environment: PROTOC, and no bytecode written into the sources."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if ARGS.get("--protoc"):
        env["PROTOC"] = ARGS["--protoc"]
    return env


def line_of(o, stream):
    """A `tsmine detect` JSON alert as the examples print it (subscriber.py line())."""
    score = "-" if o.get("score") is None else "%.6f" % o["score"]
    text = "%s %s seq=%d start=%d length=%d distance=%.6g neighbor=%d score=%s" % (
        o["kind"], stream, o["seq"], o["start_seq"], o["length"], o["distance"],
        o["neighbor_seq"], score)
    if o["kind"] in ("ANOMALY", "ANOMALY_END"):
        text += " event=[%d,%d)" % (o["event_start_seq"], o["event_end_seq"])
    return text


def expected(env, stream):
    """What the daemon publishes for the publishers' samples: `tsmine detect` over them
    (the same engine, the daemon's defaults), as the examples' lines of stream."""
    sys.path.insert(0, ARGS["--examples"])
    import publisher  # its series(); importing runs nothing
    values = publisher.series()
    path = os.path.join(env.dir, "example.f64")
    with open(path, "wb") as f:
        f.write(struct.pack("<%dd" % len(values), *values))
    out = env.tsmine_run("detect", path).stdout
    return [line_of(json.loads(x), stream) for x in out.splitlines()]


class Subscriber:
    """An example subscriber as a process: stdout and stderr into files."""

    def __init__(self, env, cmd, name):
        self.out, self.err = (os.path.join(env.dir, name + ext) for ext in (".out", ".err"))
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                         env=child_env())

    def text(self, which="out"):
        with open(self.out if which == "out" else self.err) as f:
            return f.read()

    def lines(self, stream):
        return [x for x in self.text().splitlines() if x.split(" ")[1:2] == [stream]]

    def wait_subscribed(self):
        wait_until(lambda: "subscribed to" in self.text("err") or self.proc.poll() is not None,
                   20, "the subscriber's handshake")
        check(self.proc.poll() is None, "the subscriber exited %s: %s" %
              (self.proc.returncode, self.text("err").strip()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(10)


def publish(cmd, d, stream):
    """Runs an example publisher to the end; checks what it says."""
    p = subprocess.run(cmd + ["--ingest", d.ingest, "--control", d.control, "--stream", stream],
                       capture_output=True, text=True, timeout=60 * harness.SLOW,
                       env=child_env())
    check(p.returncode == 0 and "anomaly planted at [%d, %d)" % PLANTED in p.stdout and
          "accepted up to sequence number 3999" in p.stdout,
          "%s: exit %d: %s %s" % (os.path.basename(cmd[-1]), p.returncode, p.stdout.strip(),
                                  p.stderr.strip()))


def check_stream(sub, stream, want, name):
    got = sub.lines(stream)
    check(got == want, "%s, stream %s: printed\n  %s\n`tsmine detect` gives\n  %s" %
          (name, stream, "\n  ".join(got), "\n  ".join(want)))
    anomaly = [x for x in got if x.startswith("ANOMALY ")]
    ok = False
    for x in anomaly:
        start, m = (int(x.split(k + "=")[1].split(" ")[0]) for k in ("start", "length"))
        ok |= start < PLANTED[1] and start + m > PLANTED[0]
    ends = [x.split("event=[")[1].rstrip(")").split(",") for x in got
            if x.startswith("ANOMALY_END ")]
    check(ok and any(int(a) <= PLANTED[0] and int(b) >= PLANTED[1] for a, b in ends),
          "%s, stream %s: no ANOMALY on the planted anomaly %s, or no ANOMALY_END covering it"
          % (name, stream, PLANTED))


def run(env, pubs, subs, daemon=None, extra=None):
    """Starts the subscribers (subs: [(name, cmd)]), waits for their handshake, runs
    the publishers (pubs: [(stream, cmd)]) one after the other, waits for every alert
    `tsmine detect` expects, and checks each subscriber's lines of each stream."""
    t0 = time.monotonic()
    with (daemon or env.daemon()) as d:
        running = [(name, Subscriber(env, cmd + ["--alerts", d.alerts, "ex/"], name))
                   for name, cmd in subs]
        try:
            for _, s in running:
                s.wait_subscribed()
            if extra:
                extra(d)
            want = {}
            for stream, cmd in pubs:
                publish(cmd, d, stream)
                want[stream] = expected(env, stream)
            wait_until(lambda: all(len(s.lines(k)) >= len(v) for _, s in running
                                   for k, v in want.items()), 20, "every expected alert")
            time.sleep(0.2)  # anything beyond them would show up now
            full = d.status()
            st = full["streams"]
        finally:
            for _, s in running:
                s.stop()
    for name, s in running:
        for stream, lines in want.items():
            check_stream(s, stream, lines, name)
            check(st[stream]["alerts"] == len(lines), "STATUS: %d alerts for %s, %d expected"
                  % (st[stream]["alerts"], stream, len(lines)))
        check("#" not in s.text("err"), "%s reported missed alerts: %s" % (name, s.text("err")))
    print("# %d alerts a stream (%s); %.1f s" % (
        len(lines), ", ".join(x.split(" ")[0] for x in lines), time.monotonic() - t0))
    return running, full


def case_python(env):
    pub, sub = programs("python")
    run(env, [("ex/py", pub)], [("subscriber.py", sub)])


def case_c(env):
    pub, sub = programs("c")
    run(env, [("ex/c", pub)], [("tsmine-example-subscriber", sub)])


def case_mixed(env):
    (ppub, psub), (cpub, csub) = programs("python"), programs("c")
    running, _ = run(env, [("ex/py", ppub), ("ex/c", cpub)],
                     [("subscriber.py", psub), ("tsmine-example-subscriber", csub)])
    (_, a), (_, b) = running
    check(a.text() == b.text(), "the two subscribers printed different lines")
    py, c = ([x.replace(" %s " % k, " ") for x in a.lines(k)] for k in ("ex/py", "ex/c"))
    check(py == c, "the two publishers' streams raised different alerts")


class CurveEnv:
    """The harness Env whose sockets (the Daemon's control requests) are CURVE clients
    with the given key files, made by the examples' own helper."""

    def __init__(self, env, key_secret, server_key):
        sys.path.insert(0, ARGS["--examples"])
        import tsmine_client
        self._env, self._keys, self._client = env, (key_secret, server_key), tsmine_client

    def __getattr__(self, name):
        return getattr(self._env, name)

    @property
    def zctx(self):
        return self

    def socket(self, kind):
        s = self._env.zctx.socket(kind)
        self._client.curve_client(s, *self._keys)
        return s


class CurveDaemon(harness.Daemon):
    """A harness Daemon with security.curve on; env: a CurveEnv."""

    def __init__(self, env, workdir, secret, allow_dir):
        super().__init__(env, workdir)
        self.secret, self.allow_dir = secret, allow_dir

    def write_config(self):
        super().write_config()
        with open(self.conf, "a") as f:
            f.write("security = { curve = { secret_key_file = %s; authorized_keys = %s; }; };\n"
                    % (json.dumps(self.secret), json.dumps(self.allow_dir)))


def case_curve(env):
    keys, allow = os.path.join(env.dir, "keys"), os.path.join(env.dir, "allow")
    os.makedirs(keys)
    os.makedirs(allow)
    for name in ("server", "sensor", "stranger"):
        env.tsmine_run("keygen", os.path.join(keys, name))
    shutil.copy(os.path.join(keys, "sensor.key"), allow)

    def key(name):
        return ["--curve-key", os.path.join(keys, name + ".key_secret"),
                "--server-key", os.path.join(keys, "server.key")]
    pub, sub = programs("python")
    workdir = os.path.join(env.dir, "d")
    os.makedirs(workdir)
    daemon = CurveDaemon(CurveEnv(env, *key("sensor")[1::2]), workdir,
                         os.path.join(keys, "server.key_secret"), allow)
    stranger = []
    # the stranger's subscriber runs beside the case: it gives up after 10 s
    _, full = run(env, [("ex/py", pub + key("sensor"))], [("subscriber.py", sub + key("sensor"))],
                  daemon=daemon, extra=lambda d: stranger.append(Subscriber(
                      env, sub + key("stranger") + ["--alerts", d.alerts, "ex/"], "stranger")))
    check(full["counters"].get("curve_rejected_key", 0) >= 1,
          "the daemon counted no refused key: %s" % full["counters"])
    s = stranger[0]
    try:
        s.proc.wait(30 * harness.SLOW)
    except subprocess.TimeoutExpired:
        s.stop()
        raise Failure("the stranger's subscriber did not give up within 30 s")
    check(s.proc.returncode == 69 and "refused this key" in s.text("err") and not s.text(),
          "the stranger's subscriber: exit %s, %r, printed %r" % (
              s.proc.returncode, s.text("err"), s.text()))


CASES = {"python": case_python, "c": case_c, "mixed": case_mixed, "curve": case_curve}


def main():
    take_args()
    sys.dont_write_bytecode = True  # this file imports examples/publisher.py
    return harness.run_cases(__doc__, CASES)


if __name__ == "__main__":
    sys.exit(main())
