# SPDX-License-Identifier: Apache-2.0
"""tsmine.client against a real tsmined (TSMINED) on free loopback ports: a NAB feed
published from Python (tsmine.Publisher), its alerts received in Python (tsmine.alerts)
equal to what `tsmine detect` (TSMINE_CLI) finds in the same samples under the same
configuration (every field but alert_id, detected_at_ns and start_timestamp_ns; each
kind in the same order, seq a permutation: tests/integration/events_test.py explains
why), and tsmine.status counting every sample. Skipped where pyzmq or protobuf is
missing, the package was built without protoc, or no tsmined is given."""

import json
import math
import os
import socket
import subprocess
import time

import pytest
from conftest import nab

import tsmine

try:
    from tsmine import client
except ImportError as e:
    pytest.skip(f"no tsmine.client here: {e}", allow_module_level=True)

UNCOMPARED = ("alert_id", "detected_at_ns", "start_timestamp_ns", "seq")
PERIOD_NS = 10**9
T0 = 1_700_000_000 * 10**9


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Daemon:
    """A tsmined on free loopback ports with its embedded detection defaults."""

    def __init__(self, path, workdir):
        self.path, self.dir = path, workdir
        self.conf = os.path.join(workdir, "tsmined.conf")
        self.log_path = os.path.join(workdir, "tsmined.log")
        self.proc = None

    def start(self):
        for _ in range(3):  # a port taken meanwhile: fresh ones
            ports = free_ports(3)
            self.ingest, self.alerts, self.control = (f"tcp://127.0.0.1:{p}" for p in ports)
            os.makedirs(os.path.join(self.dir, "state"), exist_ok=True)
            with open(self.conf, "w") as f:
                f.write(f'ingest = {{ endpoints = [ "{self.ingest}" ]; }};\n'
                        f'alerts = {{ endpoint = "{self.alerts}"; }};\n'
                        f'control = {{ endpoint = "{self.control}"; }};\n'
                        'metrics = { listen = ""; };\n'
                        f'state_dir = "{os.path.join(self.dir, "state")}";\n'
                        'backend = "cpu";\nthreads = 2;\n')
            log = open(self.log_path, "a")
            env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
            self.proc = subprocess.Popen([self.path, "-c", self.conf, "--foreground"],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
            log.close()
            end = time.monotonic() + 20
            while time.monotonic() < end and self.proc.poll() is None:
                try:
                    client.status(self.control, timeout=0.2)
                    return self
                except TimeoutError:
                    pass
            self.stop()
        raise AssertionError(f"tsmined did not start: {self.log()}")

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def daemon(tmp_path):
    path = os.environ.get("TSMINED")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tsmined to run (TSMINED unset)")
    d = Daemon(path, str(tmp_path)).start()
    yield d
    d.stop()


def same(x, y):
    if y is None:  # tsmine detect prints a NaN number as null, and "none" as null
        return x is None or (isinstance(x, float) and math.isnan(x))
    if isinstance(y, float) and math.isnan(y):
        return isinstance(x, float) and math.isnan(x)
    return x == y


def test_publish_nab_feed_receive_its_alerts(daemon, cli, data_dir):
    name = "nyc_taxi"
    values = nab(f"{name}.csv")
    with client.alerts(daemon.alerts, prefix=name) as subscription:
        with tsmine.Publisher(daemon.ingest, batch=500) as pub:
            assert pub.send(name, values, first_timestamp_ns=T0, period_ns=PERIOD_NS) == len(values)
        end = time.monotonic() + 60
        while tsmine.status(daemon.control)["streams"].get(name, {}).get("samples") != len(values):
            assert time.monotonic() < end, f"samples not all counted: {tsmine.status(daemon.control)}"
            time.sleep(0.05)
        detect = subprocess.run(
            [cli, "detect", "-c", daemon.conf, "--period-ns", str(PERIOD_NS), data_dir / f"{name}.csv"],
            capture_output=True, text=True, check=True, timeout=300)
        want = [json.loads(line) for line in detect.stdout.splitlines()]
        got = []
        while len(got) < len(want):
            a = subscription.get(timeout=60)
            assert a is not None, f"{len(got)} alerts of {len(want)} within 60 s: {daemon.log()}"
            got.append(a)
        assert subscription.get(timeout=1.0) is None  # nothing more
    assert len(want) > 10
    assert sorted(a["seq"] for a in got) == list(range(1, len(got) + 1))
    for kind in sorted({a["kind"] for a in want}):
        gk = [a for a in got if a["kind"] == kind]
        wk = [a for a in want if a["kind"] == kind]
        assert len(gk) == len(wk), f"{len(gk)} {kind} alerts received, tsmine detect {len(wk)}"
        for x, y in zip(gk, wk):
            diff = {f: (x.get(f), y[f]) for f in y if f not in UNCOMPARED and not same(x.get(f), y[f])}
            assert not diff, f"{kind}: (received, detect) differ: {diff}"

    st = tsmine.status(daemon.control)
    s = st["streams"][name]
    assert s["samples"] == len(values) and s["next_seq"] == len(values)
    assert s["alerts"] == len(want) and s["subsequence"] == want[0]["length"]  # the m it chose
    assert sum(st["alerts_by_kind"].values()) == len(want)
    assert st["backend"] == "cpu" and st["version"]


def test_client_errors(tmp_path):
    port = free_ports(1)[0]
    with pytest.raises(TimeoutError, match="no control reply"):
        tsmine.status(f"tcp://127.0.0.1:{port}", timeout=0.2)
    with pytest.raises(TimeoutError, match="no handshake"):
        tsmine.alerts(f"tcp://127.0.0.1:{port}", connect_timeout=0.2)
    with pytest.raises(ValueError, match="both"):
        tsmine.status(f"tcp://127.0.0.1:{port}", curve_key=str(tmp_path / "k"))


def test_newer_fields_are_read():
    """A daemon built from a newer tsmine.proto sends fields this package does not know:
    the alert still decodes, with the fields it knows (field 99, a varint, appended)."""
    raw = client.pb.Alert(stream_id="s", kind=client.pb.MOTIF, seq=7).SerializeToString()
    a = client.to_dict(client.pb.Alert.FromString(raw + b"\x98\x06\x01"))
    assert (a["stream_id"], a["kind"], a["seq"]) == ("s", "MOTIF", 7)
    assert set(a) == {f.name for f in client.pb.Alert.DESCRIPTOR.fields}
