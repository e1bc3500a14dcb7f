#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mqtt_test.py - tsmined as an MQTT client (issue 20, daemon/mqtt/mqtt.h) against a real
mosquitto broker that each case starts on a free loopback port with a temporary
configuration (`mosquitto -c FILE`), and paho-mqtt as the independent client.

    mqtt_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  restart         QoS 1 into a persistent session: three streams (JSON without seq, so
                  numbered by arrival; protobuf with its own first_seq; line protocol)
                  published at a steady rate while tsmined is stopped (SIGTERM) and
                  started again mid-stream: every sample is counted once, none refused.
  malformed       bad JSON, bad line protocol, bytes that are no SampleBatch and empty
                  payloads are counted per reason (json, influx, decode, empty), the good
                  messages between them all land, the daemon goes on.
  tls             a CA, a server and a client certificate made with the openssl CLI at
                  test time; the broker requires the client certificate and a password
                  (mosquitto_passwd): samples arrive over TLS; a wrong CA file is counted
                  as a failed connection, never as a start failure; a CA file that
                  cannot be read stops the start (78, naming the file and the key).
  broker_restart  the broker (persistence on) is stopped and started again on the same
                  port mid-stream: tsmined reconnects (backoff), the connection loss and
                  the reconnection are counted, and no sample is lost (JSON "seq", so
                  redeliveries are duplicates, not new samples).
  alerts          a planted anomaly: the ANOMALY alert reaches tsmine/alerts/STREAM as the
                  JSON `tsmine alerts` prints for it (same alert on ZeroMQ), and a
                  subscriber that connects afterwards gets the retained state
                  {"state":"anomaly",...} on tsmine/state/STREAM. Prints the latency from
                  the publish of the anomalous sample to the ANOMALY on the MQTT topic.
  bench           not in CI: samples/s through the broker at QoS 0 and 1 (docs/performance.md).

Prints `ok - NAME` or `not ok - NAME`; exits 0, 1, or 77 (no mosquitto, no paho-mqtt,
tsmined built without libmosquitto).
"""

import json
import math
import os
import pwd
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import harness
from harness import Failure, check, wait_until

try:
    import paho.mqtt.client as mqtt
except ImportError as e:
    print("SKIP: this python3 cannot import paho.mqtt (%s); install python3-paho-mqtt" % e)
    sys.exit(77)

SEED = 20261127
MOSQUITTO = shutil.which("mosquitto") or ("/usr/sbin/mosquitto"
                                          if os.path.exists("/usr/sbin/mosquitto") else None)


class Broker:
    """mosquitto on a free loopback port; `tls` a dict of listener options (cafile,
    certfile, keyfile, ...), `password_file` for allow_anonymous false."""

    def __init__(self, workdir, persistence=False, tls=None, password_file=None):
        self.dir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.port = harness.free_port()
        self.persistence, self.tls, self.password_file = persistence, tls, password_file
        self.proc = None
        self.log_path = os.path.join(workdir, "mosquitto.log")

    def write_config(self):
        lines = ["listener %d 127.0.0.1" % self.port,
                 "user %s" % pwd.getpwuid(os.getuid()).pw_name,  # root: do not drop to mosquitto
                 "max_queued_messages 200000",
                 "persistence %s" % ("true" if self.persistence else "false"),
                 "persistence_location %s/" % self.dir,
                 "log_dest stderr", "log_type error", "log_type warning", "log_type notice"]
        for k, v in (self.tls or {}).items():
            lines.append("%s %s" % (k, v))
        if self.password_file:
            lines += ["allow_anonymous false", "password_file %s" % self.password_file]
        else:
            lines.append("allow_anonymous true")
        conf = os.path.join(self.dir, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return conf

    def start(self):
        conf = self.write_config()
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", conf], stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        wait_until(lambda: self.listening() or self.proc.poll() is not None, 10, "mosquitto")
        if self.proc.poll() is not None:
            self.dump_log()
            raise Failure("mosquitto exited with status %d at start" % self.proc.returncode)
        return self

    def listening(self):
        import socket
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        if self.proc:
            self.log.close()

    def dump_log(self):
        with open(self.log_path) as f:
            sys.stdout.write("---- mosquitto log ----\n" + f.read())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            self.dump_log()
        return False


def client(cid="", clean=True):
    kw = dict(client_id=cid, clean_session=clean, protocol=mqtt.MQTTv311)
    if hasattr(mqtt, "CallbackAPIVersion"):  # paho-mqtt 2
        return mqtt.Client(mqtt.CallbackAPIVersion.VERSION1, **kw)
    return mqtt.Client(**kw)


class Publisher:
    """A paho client with its network thread; publish() waits for the broker's PUBACK
    of everything at flush()."""

    def __init__(self, broker, cid="", tls=None, auth=None):
        self.c = client(cid, clean=not cid)
        if tls:
            self.c.tls_set(**tls)
        if auth:
            self.c.username_pw_set(*auth)
        self.c.max_inflight_messages_set(1000)
        self.c.max_queued_messages_set(0)
        self.c.reconnect_delay_set(0.1, 1)
        self.c.connect("127.0.0.1", broker.port)
        self.c.loop_start()
        self.infos = []

    def publish(self, topic, payload, qos=1, retry=False):
        """retry: while the broker is away, try again every 50 ms (paho refuses)."""
        while True:
            info = self.c.publish(topic, payload, qos=qos)
            if info.rc == mqtt.MQTT_ERR_SUCCESS or not retry:
                self.infos.append(info)
                return
            time.sleep(0.05)

    def flush(self, timeout=30):
        wait_until(lambda: all(i.is_published() for i in self.infos), timeout,
                   "the broker's PUBACKs")
        self.infos = []

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


class Listener:
    """Subscribes to a topic filter and keeps (arrival time, topic, payload, retain)."""

    def __init__(self, broker, topic, qos=1):
        self.got, self.lock = [], threading.Lock()
        self.c = client()
        self.c.on_message = self.on_message
        self.c.on_connect = lambda c, u, f, rc: c.subscribe(topic, qos)
        self.c.connect("127.0.0.1", broker.port)
        self.c.loop_start()

    def on_message(self, c, u, msg):
        with self.lock:
            self.got.append((time.monotonic(), msg.topic, msg.payload, msg.retain))

    def messages(self):
        with self.lock:
            return list(self.got)

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


def mqtt_conf(broker, topics=("sensors/#",), **more):
    """The daemon's mqtt group (harness.Daemon extra)."""
    g = {"broker": "127.0.0.1:%d" % broker.port, "subscribe": list(topics), "reconnect_max": 2}
    g.update(more)
    tls = g.pop("tls", None)
    body = " ".join("%s = %s;" % (k, harness.conf_value(v)) for k, v in g.items())
    if tls:
        body += " tls = %s;" % harness.conf_group(tls)
    return lambda d: ["mqtt = { %s };" % body]


def counters(d):
    return d.status()["counters"]


def wait_connected(d, connects=1, timeout=20):
    wait_until(lambda: counters(d).get("mqtt_connects", 0) >= connects and
               counters(d).get("mqtt_connected") == 1, timeout,
               "tsmined's MQTT connection #%d" % connects)


def wait_subscribed(d, pub, topic="sensors/probe", timeout=20):
    """tsmined's subscriptions take effect at the broker after its CONNACK, which
    wait_connected sees; what is published in between is dropped (nothing subscribed
    yet). Publishes a probe on topic, within the subscription, until tsmined counts an
    MQTT message."""
    base = counters(d).get("mqtt_messages", 0)

    def probed():
        pub.publish(topic, json.dumps({"value": 0.0}))
        return counters(d).get("mqtt_messages", 0) > base

    wait_until(probed, timeout, "tsmined's subscription (a probe on %s counted)" % topic)
    pub.flush()


def refused(d):
    return {k: v for k, v in d.status()["rejected"].items() if v}


# ---- cases ----------------------------------------------------------------------------

def case_restart(env):
    rng = random.Random(SEED)
    n = 400  # messages per stream
    total_pb = 0
    with Broker(os.path.join(env.dir, "broker")) as broker:
        d = env.daemon(extra=mqtt_conf(broker))
        d.start()
        try:
            wait_connected(d)
            pub = Publisher(broker, "publisher-restart")
            wait_subscribed(d, pub)
            sent = {"json": 0, "pb": 0, "influx": 0}
            down = threading.Event()  # set while tsmined is stopped
            while_down = [0]

            def produce(lo, hi):
                nonlocal total_pb
                for k in range(lo, hi):
                    pub.publish("sensors/json", json.dumps({"value": rng.gauss(0, 1)}))
                    pub.publish("sensors/pb", env.batch("plant/pb", 4 * k,
                                                         [rng.gauss(0, 1) for _ in range(4)]))
                    pub.publish("sensors/influx",
                                "cpu,host=h1 usage=%r %d" % (rng.random(), 1700000000000000000 + k))
                    sent["json"] += 1
                    sent["pb"] += 4
                    sent["influx"] += 1
                    while_down[0] += 3 if down.is_set() else 0
                    time.sleep(0.01)  # >= 2 s for the stopped stretch: some of it lands while down

            produce(0, n // 4)
            pub.flush()
            # stopped mid-stream: the publisher goes on while the daemon is away
            t = threading.Thread(target=produce, args=(n // 4, 3 * n // 4))
            t.start()
            time.sleep(0.3)
            rc = d.stop()
            down.set()
            check(rc == 0, "tsmined exited %d after SIGTERM" % rc)
            time.sleep(0.5)
            d.start(wait=False)
            down.clear()
            wait_until(lambda: d.status(timeout_ms=200, fail=False), 20, "tsmined's restart")
            t.join()
            check(while_down[0] > 0, "nothing was published while tsmined was down")
            produce(3 * n // 4, n)
            pub.flush()
            expect = {"sensors/json": sent["json"], "plant/pb": sent["pb"],
                      "cpu,host=h1/usage": sent["influx"]}
            d.wait_samples(expect, timeout=30)
            st = d.status()
            check(not refused(d), "refusals: %s" % refused(d))
            with open(d.log_path) as f:
                log = f.read()
            check("resumed session" in log, "the second connection did not resume the session")
            print("# %s samples, %d messages published while tsmined was down; every sample "
                  "counted once, 0 lost, 0 refused" % (expect, while_down[0]))
            pub.close()
        finally:
            d.kill()


def case_malformed(env):
    with Broker(os.path.join(env.dir, "broker")) as broker:
        with env.daemon(extra=mqtt_conf(broker, ("sensors/#", "telegraf/#"))) as d:
            wait_connected(d)
            pub = Publisher(broker)
            wait_subscribed(d, pub)
            bad = {"json": ["{\"value\": 1", "[1, \"x\"]", "{\"val\": 1}", "[]", "{\"value\":1,\"seq\":-2}"],
                   "influx": ["cpu", "cpu x=abc", "cpu x=1 notatime", "cpu y=\"open"],
                   "decode": [b"\x12\xff\xff\xff\xff\x0f", b"\x08\x01\x3a\x10\x00"],
                   "empty": [b""]}
            good = 0
            for reason, payloads in bad.items():
                for p in payloads:
                    topic = "telegraf/x" if reason == "influx" else "sensors/m"
                    pub.publish(topic, p)
                    pub.publish("sensors/good", json.dumps([{"value": good}, {"value": good + 1}]))
                    good += 2
            pub.flush()
            d.wait_samples({"sensors/good": good})
            got = refused(d)
            want = {k: len(v) for k, v in bad.items()}
            check(got == want, "refusals %s, expected %s" % (got, want))
            check(d.proc.poll() is None, "tsmined died")
            print("# refused per reason: %s; %d good samples between them all accepted" %
                  (got, good))
            pub.close()


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_pki(dirname):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, in dirname."""
    os.makedirs(dirname, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=tsmine test CA",
            "-keyout", "ca.key", "-out", "ca.crt", cwd=dirname)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=tsmine test %s" % name,
                "-keyout", name + ".key", "-out", name + ".csr", cwd=dirname)
        with open(os.path.join(dirname, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".crt",
                cwd=dirname)
    return {k: os.path.join(dirname, k) for k in ("ca.crt", "server.crt", "server.key",
                                                   "client.crt", "client.key", "ca.key")}


def case_tls(env):
    if not shutil.which("openssl") or not shutil.which("mosquitto_passwd"):
        print("SKIP: needs the openssl and mosquitto_passwd programs")
        return 77
    pki = make_pki(os.path.join(env.dir, "pki"))
    pwfile = os.path.join(env.dir, "passwd")
    subprocess.run(["mosquitto_passwd", "-b", "-c", pwfile, "tsmined", "s3cret"], check=True,
                   capture_output=True)
    subprocess.run(["mosquitto_passwd", "-b", pwfile, "sensor", "s3nsor"], check=True,
                   capture_output=True)
    secret = os.path.join(env.dir, "tsmined.password")
    with open(secret, "w") as f:
        f.write("s3cret\n")
    tls = {"cafile": pki["ca.crt"], "certfile": pki["server.crt"], "keyfile": pki["server.key"],
           "require_certificate": "true"}
    with Broker(os.path.join(env.dir, "broker"), tls=tls, password_file=pwfile) as broker:
        conf = mqtt_conf(broker, username="tsmined", password_file=secret,
                         tls={"ca_file": pki["ca.crt"], "cert_file": pki["client.crt"],
                              "key_file": pki["client.key"]})
        with env.daemon(extra=conf) as d:
            wait_connected(d)
            pub = Publisher(broker, tls={"ca_certs": pki["ca.crt"], "certfile": pki["client.crt"],
                                         "keyfile": pki["client.key"]}, auth=("sensor", "s3nsor"))
            wait_subscribed(d, pub)
            for k in range(50):
                pub.publish("sensors/tls", json.dumps({"value": k, "seq": k}))
            pub.flush()
            d.wait_samples({"sensors/tls": 50})
            pub.close()
        # the wrong CA: the handshake fails, counted and retried; the daemon runs
        other = make_pki(os.path.join(env.dir, "pki2"))
        conf = mqtt_conf(broker, username="tsmined", password_file=secret,
                         tls={"ca_file": other["ca.crt"], "cert_file": pki["client.crt"],
                              "key_file": pki["client.key"]})
        with env.daemon(name="wrong_ca", extra=conf) as d:
            wait_until(lambda: counters(d).get("mqtt_connect_errors", 0) >= 2, 15,
                       "two failed TLS connections")
            c = counters(d)
            check(c["mqtt_connects"] == 0 and c["mqtt_connected"] == 0, "connected: %s" % c)
        # a file that cannot be read is a configuration error: 78, naming file and key
        conf = mqtt_conf(broker, tls={"ca_file": os.path.join(env.dir, "missing.crt")})
        d = env.daemon(name="missing_ca", extra=conf).start(wait=False)
        rc = d.proc.wait(30 * harness.SLOW)
        d.log.close()
        with open(d.log_path) as f:
            log = f.read()
        check(rc == 78 and "%s: mqtt.tls.ca_file: " % d.conf in log,
              "a missing CA file: status %d, log %s" % (rc, log[-300:]))
    print("# TLS with a client certificate and a password: 50 of 50 samples; a wrong CA: "
          "%d failed attempts, no connection; a missing CA file: exit 78" %
          c["mqtt_connect_errors"])


def case_broker_restart(env):
    n = 600
    broker = Broker(os.path.join(env.dir, "broker"), persistence=True).start()
    try:
        with env.daemon(extra=mqtt_conf(broker)) as d:
            wait_connected(d)
            pub = Publisher(broker, "publisher-br")
            wait_subscribed(d, pub)
            done = threading.Event()

            def produce():
                for k in range(n):
                    pub.publish("sensors/br", json.dumps({"value": math.sin(k / 5), "seq": k}),
                                retry=True)
                    time.sleep(0.004)
                done.set()

            t = threading.Thread(target=produce)
            t.start()
            time.sleep(0.8)
            broker.stop()
            time.sleep(1.0)
            broker.start()  # same port, same persistence file
            t.join()
            pub.flush(timeout=30)
            d.wait_samples({"sensors/br": n}, timeout=30)
            c = counters(d)
            check(c["mqtt_connects"] >= 2 and c["mqtt_connection_losses"] >= 1,
                  "counters after a broker restart: %s" % c)
            r = refused(d)
            check(set(r) <= {"duplicate"}, "refusals other than redelivered duplicates: %s" % r)
            print("# broker restarted mid-stream: %d of %d samples, %d connections, %d lost, "
                  "%d redelivered duplicates refused" % (d.status()["streams"]["sensors/br"]["samples"],
                                                         n, c["mqtt_connects"],
                                                         c["mqtt_connection_losses"],
                                                         r.get("duplicate", 0)))
            pub.close()
    finally:
        broker.stop()


def case_alerts(env):
    rng = random.Random(SEED + 3)
    n, at = 1500, 1000
    values = [math.sin(2 * math.pi * k / 24) + rng.gauss(0, 0.2) for k in range(n)]
    for k in range(at, at + 24):
        values[k] += rng.gauss(0, 1.0)
    stream = "plant/a1"  # topic sensors/a1: strip_levels 1, stream_prefix "plant/"
    with Broker(os.path.join(env.dir, "broker")) as broker:
        conf = mqtt_conf(broker, ("sensors/#",), stream_prefix="plant/", strip_levels=1)
        with env.daemon(extra=conf) as d:
            wait_connected(d)
            lis = Listener(broker, "tsmine/alerts/#")
            printer = subprocess.Popen([env.tsmine, "alerts", "--endpoint", d.alerts],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            time.sleep(0.5)  # both subscriptions in place
            pub = Publisher(broker)
            wait_subscribed(d, pub)  # and tsmined's (a probe stream, plant/probe: no alerts)
            sent_at = {}
            for k in range(n):  # one sample a message, as a sensor sends them
                pub.publish("sensors/a1", json.dumps({"value": values[k], "seq": k}))
                sent_at[k] = time.monotonic()
                if k % 10 == 9:
                    time.sleep(0.002)
            pub.flush()
            d.wait_samples({stream: n})

            def anomaly():
                for t, topic, payload, _ in lis.messages():
                    a = json.loads(payload)
                    if a["kind"] == "ANOMALY" and at <= a["detected_seq"] < at + 48:
                        return t, topic, a  # the planted one (others may come before it)
            t, topic, a = wait_until(anomaly, 20, "an ANOMALY over the planted one on MQTT")
            check(topic == "tsmine/alerts/" + stream and a["stream_id"] == stream,
                  "ANOMALY on %s for %s" % (topic, a["stream_id"]))
            latency_ms = (t - sent_at[a["detected_seq"]]) * 1e3
            # the same alerts, the same JSON, as `tsmine alerts` prints them
            time.sleep(1.0)
            printer.send_signal(signal.SIGINT)
            printed = set(printer.communicate(timeout=10)[0].splitlines())
            got = [m[2].decode() for m in lis.messages()]
            check(got and all(g in printed for g in got),
                  "MQTT alerts not printed alike by tsmine alerts: %s" %
                  [g for g in got if g not in printed][:2])
            # a late subscriber sees the retained state at once
            late = Listener(broker, "tsmine/state/#")
            state = wait_until(lambda: [m for m in late.messages() if m[3]], 5, "retained state")
            check(state[0][1] == "tsmine/state/" + stream, "state topic %s" % state[0][1])
            s = json.loads(state[0][2])
            check(s["state"] in ("anomaly", "normal") and s["alert"]["stream_id"] == stream,
                  "state %s" % s)
            want = "anomaly" if d.status()["streams"][stream]["event_open"] else "normal"
            check(s["state"] == want, "retained %s, the stream's event_open says %s" %
                  (s["state"], want))
            print("# %d alerts on MQTT, each as tsmine alerts prints it; ANOMALY at seq %d, "
                  "%.1f ms after its sample was published; retained state %r" %
                  (len(got), a["detected_seq"], latency_ms, s["state"]))
            for c in (lis, late, pub):
                c.close()


def case_bench(env):
    """Samples/s through the broker: N messages of B samples (JSON arrays), QoS 0 and 1,
    published as fast as paho goes; the clock runs from the first publish to the
    daemon's count of all samples (best of 3)."""
    nmsg, per = int(os.environ.get("BENCH_MESSAGES", "4000")), int(os.environ.get("BENCH_BATCH", "50"))
    with Broker(os.path.join(env.dir, "broker")) as broker:
        for qos in (0, 1):
            best = None
            for rep in range(3):
                conf = mqtt_conf(broker, ("bench/#",), qos=qos, client_id="bench%d%d" % (qos, rep))
                with env.daemon(name="b%d%d" % (qos, rep), extra=conf,
                                params={"window": 1024, "hop": 1024}) as d:
                    wait_connected(d)
                    pub = Publisher(broker)
                    body = json.dumps([{"value": math.sin(k / 7)} for k in range(per)])
                    t0 = time.monotonic()
                    for k in range(nmsg):
                        pub.publish("bench/s%d" % (k % 8), body, qos=qos)
                    pub.flush(120)
                    total = nmsg * per
                    wait_until(lambda: sum(s["samples"] for s in d.status()["streams"].values())
                               >= total, 120, "all samples", step=0.01)
                    dt = time.monotonic() - t0
                    pub.close()
                best = dt if best is None else min(best, dt)
            print('{"bench": "mqtt_ingest", "qos": %d, "messages": %d, "batch": %d, '
                  '"seconds": %.3f, "samples_per_s": %.0f, "messages_per_s": %.0f}' %
                  (qos, nmsg, per, best, nmsg * per / best, nmsg / best))


CASES = {f.__name__[5:]: f for f in (case_restart, case_malformed, case_tls, case_broker_restart,
                                     case_alerts, case_bench)}


def main():
    tsmined = sys.argv[sys.argv.index("--tsmined") + 1] if "--tsmined" in sys.argv else None
    if tsmined and "mqtt: yes" not in subprocess.run([tsmined, "--version"], capture_output=True,
                                                      text=True).stdout:
        print("SKIP: tsmined was built without libmosquitto (no MQTT)")
        return 77
    if not MOSQUITTO:
        print("SKIP: no mosquitto broker (Debian: mosquitto)")
        return 77
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
