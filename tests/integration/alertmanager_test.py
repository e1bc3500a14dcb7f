#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""alertmanager_test.py - tsmined's anomaly events in the real Prometheus Alertmanager
(issue 20 item 3; daemon/sink/alertmanager.h), seen through Alertmanager's own API and a
webhook receiver it notifies, everything on free loopback ports.

    alertmanager_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases (a noisy sine of period 24 with a burst of 96 samples planted after the warm-up,
as events_test.py planted; threshold 0.9999, resend_interval 1 s; the feed is held in
the middle of the burst, so that the event stays open until the rest is sent):
  fire_resolve   the ANOMALY appears in GET /api/v2/alerts as an active alert with the
                 labels alertname, stream, kind, daemon, the annotations distance, score,
                 start_time, and endsAt 4 s after its last send; it is re-sent while open;
                 the ANOMALY_END resolves it: it leaves the API's list and the webhook
                 receives it with status "resolved" and endsAt = when the event closed.
                 STATUS: alertmanager_sent >= 2, resolved >= 1, failures 0.
  down_then_up   Alertmanager is down when the ANOMALY comes: the failed requests are
                 counted (alertmanager_failures >= 2) and retried with backoff; once it
                 starts the alert arrives (within the 4 s cap of a retry, plus start-up).
  restart        tsmined stops (SIGTERM) with the event open and starts again from its
                 checkpoint: the new process re-sends the open alert (Alertmanager keeps
                 its first startsAt), and the event's ANOMALY_END resolves it.
  deleted        `tsmine delete` removes a stream with its event open: no ANOMALY_END
                 will come, so the sender resolves the alert at its next look at the
                 engine's open events (every resend_interval); alertmanager_orphaned 1.
  tls_auth       Alertmanager serves https with a certificate of a test CA (openssl) and
                 asks for basic auth (bcrypt, --web.config.file): with ca_file, username
                 and password_file the alert arrives; a wrong password is refused (401:
                 counted in alertmanager_rejected, nothing arrives); without ca_file the
                 handshake fails (counted in alertmanager_failures, retried).
  latency        five streams, each fed one sample every 5 ms across its burst: the time
                 from sending the sample that completes the ANOMALY's subsequence to the
                 alert visible in GET /api/v2/alerts (polled every 5 ms); prints
                 "# latency" lines (the figure of docs/performance.md).

Needs prometheus-alertmanager (Debian 12: the package of that name); without it
every case exits 77 (skipped). Prints `ok - NAME` or `not ok - NAME`; exits 0, 1, 77.
"""

import base64
import http.server
import json
import math
import os
import random
import shutil
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

import harness
from harness import Failure, check, wait_until

SEED = 20261127
PERIOD, AT, WIDTH, N = 24, 1500, 96, 3000
PARAMS = {"threshold": 0.9999}  # no event on the noise alone

AM_CONFIG = """route:
  receiver: hook
  group_by: ['stream']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:%d/hook
        send_resolved: true
"""


def am_binary():
    return shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


class Webhook:
    """An HTTP server that keeps every JSON body Alertmanager posts to it."""

    def __init__(self):
        got, lock = [], threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    got.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.got, self.lock = got, lock
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self):
        with self.lock:
            return [a for msg in self.got for a in msg["alerts"]]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Alertmanager:
    """prometheus-alertmanager on a loopback port with a temporary configuration and
    storage, no cluster; its log in the work folder."""

    def __init__(self, workdir, port, hook_port):
        self.dir = os.path.join(workdir, "am")
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        self.port = port
        self.conf = os.path.join(self.dir, "alertmanager.yml")
        with open(self.conf, "w") as f:
            f.write(AM_CONFIG % hook_port)
        self.proc = None
        self.web_config, self.ctx, self.auth = None, None, None

    def secure(self, ca, cert, key, user, password, hashed):
        """Serves HTTPS with cert/key and asks for basic auth (--web.config.file)."""
        self.web_config = os.path.join(self.dir, "web.yml")
        with open(self.web_config, "w") as f:
            f.write("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
                    "basic_auth_users:\n  %s: '%s'\n" % (cert, key, user, hashed))
        self.ctx = ssl.create_default_context(cafile=ca)
        self.auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.web_config else "http", self.port)

    def get(self, path):
        req = urllib.request.Request(self.url + path)
        if self.auth:
            req.add_header("Authorization", self.auth)
        return urllib.request.urlopen(req, timeout=2, context=self.ctx)

    def start(self):
        self.log = open(os.path.join(self.dir, "alertmanager.log"), "a")
        self.proc = subprocess.Popen(
            [am_binary(), "--config.file", self.conf, "--storage.path",
             os.path.join(self.dir, "data"), "--web.listen-address", "127.0.0.1:%d" % self.port,
             "--cluster.listen-address="] +
            (["--web.config.file", self.web_config] if self.web_config else []),
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)

        def ready():
            check(self.proc.poll() is None, "alertmanager exited with %s" % self.proc.returncode)
            try:
                with self.get("/-/ready") as r:
                    return r.status == 200
            except OSError:
                return False
        wait_until(ready, 20, "alertmanager to be ready", step=0.05)
        return self

    def alerts(self):
        """GET /api/v2/alerts: the alerts it holds (resolved ones are not listed)."""
        with self.get("/api/v2/alerts") as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()

    def dump_log(self):
        path = os.path.join(self.dir, "alertmanager.log")
        if os.path.exists(path):
            with open(path) as f:
                for line in f.readlines()[-20:]:
                    sys.stdout.write("# am: " + line)


def series(rng):
    values = [math.sin(2 * math.pi * k / PERIOD) + rng.gauss(0, 0.2) for k in range(N)]
    for k in range(AT, AT + WIDTH):  # a long burst: the sine's noise grows tenfold
        values[k] += rng.gauss(0, 2.0)
    return values


def daemon(env, am_urls, resend=1, instance="it-daemon", name="d", **more):
    return env.daemon(name, params=PARAMS, groups={"alertmanager": dict({
        "urls": am_urls, "resend_interval": resend, "timeout": int(min(300, 10 * harness.SLOW)),
        "instance": instance,
        "generator_url": "http://127.0.0.1:9464/metrics"}, **more)},
        extra_env={"no_proxy": "*"})


def ours(alerts, stream):
    return [a for a in alerts if a["labels"].get("stream") == stream]


def feed_until_anomaly(env, d, sock, stream, values):
    """Sends the series up to the middle of the burst and waits until the daemon counted
    an event on the stream (STATUS events); held there, the event stays open."""
    held = AT + WIDTH // 2
    env.send_series(sock, stream, values[:held], batch=32)
    wait_until(lambda: d.status()["streams"].get(stream, {}).get("events", 0) >= 1, 20,
               "the ANOMALY on the burst")
    return held


def counters(d):
    return d.status()["counters"]


def run_with_am(env, body):
    """Runs body(hook, am) with a webhook receiver and an Alertmanager (not started)."""
    if not am_binary():
        print("SKIP: no prometheus-alertmanager (Debian: prometheus-alertmanager)")
        return 77
    hook = Webhook()
    am = Alertmanager(env.dir, harness.free_port(), hook.port)
    try:
        return body(hook, am)
    except Failure:
        am.dump_log()
        raise
    finally:
        am.stop()
        hook.close()


def case_fire_resolve(env):
    def body(hook, am):
        am.start()
        values = series(random.Random(SEED))
        stream = "site/pump-1"
        with daemon(env, [am.url]) as d:
            sock = env.pusher(d.ingest)
            held = feed_until_anomaly(env, d, sock, stream, values)
            got = wait_until(lambda: ours(am.alerts(), stream), 10, "the alert in Alertmanager")
            check(len(got) == 1, "%d alerts for the stream: %s" % (len(got), got))
            a = got[0]
            check(a["status"]["state"] == "active", "state %s" % a["status"])
            check(a["labels"] == {"alertname": "TsmineAnomaly", "stream": stream,
                                  "kind": "anomaly", "daemon": "it-daemon"},
                  "labels %s" % a["labels"])
            ann = a["annotations"]
            check(all(k in ann for k in ("summary", "distance", "score", "start_time",
                                         "start_seq", "length")), "annotations %s" % ann)
            start, m = int(ann["start_seq"]), int(ann["length"])
            check(start < AT + WIDTH and start + m > AT and float(ann["score"]) >= 0.997,
                  "the alert's subsequence [%d, %d) misses the burst [%d, %d), score %s"
                  % (start, start + m, AT, AT + WIDTH, ann["score"]))
            check(a["generatorURL"] == "http://127.0.0.1:9464/metrics", a["generatorURL"])
            # re-sent every second while open: sent grows, and endsAt stays ~4 s ahead
            c0 = counters(d)["alertmanager_sent"]
            wait_until(lambda: counters(d)["alertmanager_sent"] >= c0 + 2, 10, "two re-sends")
            ends = ours(am.alerts(), stream)[0]["endsAt"]
            env.send_series(sock, stream, values[held:], batch=32, first_seq=held)
            d.wait_samples({stream: N})
            wait_until(lambda: not ours(am.alerts(), stream), 15,
                       "the alert to leave Alertmanager's active list (resolved)")
            wait_until(lambda: any(x["status"] == "resolved" for x in ours(hook.alerts(), stream)),
                       15, "the webhook's resolved notification")
            c = counters(d)
        res = [x for x in ours(hook.alerts(), stream) if x["status"] == "resolved"][-1]
        fired = [x for x in ours(hook.alerts(), stream) if x["status"] == "firing"]
        check(fired and fired[0]["startsAt"] == res["startsAt"] and res["endsAt"] < ends,
              "firing %s, resolved %s (endsAt while open %s)" % (fired, res, ends))
        check(c["alertmanager_sent"] >= 2 and c["alertmanager_resolved"] >= 1 and
              c["alertmanager_failures"] == 0 and c["alertmanager_queue_drops"] == 0 and
              c["alertmanager_open"] == 0 and c["alertmanager_last_success_time"] > 0,
              "counters %s" % {k: v for k, v in c.items() if k.startswith("alertmanager")})
        print("# fired at %s, resolved at %s; sent %d, resolved %d, failures 0" %
              (res["startsAt"], res["endsAt"], c["alertmanager_sent"],
               c["alertmanager_resolved"]))
    return run_with_am(env, body)


def case_down_then_up(env):
    def body(hook, am):
        values = series(random.Random(SEED))
        stream = "site/pump-2"
        with daemon(env, [am.url], resend=60) as d:
            sock = env.pusher(d.ingest)
            feed_until_anomaly(env, d, sock, stream, values)
            wait_until(lambda: counters(d)["alertmanager_failures"] >= 2, 10,
                       "two failed requests (Alertmanager is down)")
            check(counters(d)["alertmanager_sent"] == 0, "sent while Alertmanager was down")
            t0 = time.monotonic()
            am.start()
            got = wait_until(lambda: ours(am.alerts(), stream), 30, "the retried alert")
            took = time.monotonic() - t0
            # Alertmanager holds the alert before tsmined has read its reply and counted
            # it (under valgrind, seconds before)
            wait_until(lambda: counters(d)["alertmanager_sent"] >= 1, 10,
                       "the retried alert to be counted as sent")
            c = counters(d)
        check(got[0]["status"]["state"] == "active", "state %s" % got[0]["status"])
        check(c["alertmanager_sent"] >= 1 and c["alertmanager_failures"] >= 2,
              "counters %s" % {k: v for k, v in c.items() if k.startswith("alertmanager")})
        print("# %d failed requests while down; the alert arrived %.1f s after Alertmanager "
              "started" % (c["alertmanager_failures"], took))
    return run_with_am(env, body)


def iso_seconds(text):
    """Seconds since the epoch of an RFC 3339 time such as 2026-11-27T20:58:22.919Z."""
    import datetime
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def case_restart(env):
    def body(hook, am):
        am.start()
        values = series(random.Random(SEED))
        stream = "site/pump-3"
        with daemon(env, [am.url]) as d:
            sock = env.pusher(d.ingest)
            held = feed_until_anomaly(env, d, sock, stream, values)
            first = wait_until(lambda: ours(am.alerts(), stream), 10, "the alert")[0]
            sock.close()
            check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
            d.start()  # the same state directory: the event is open in the checkpoint
            check(d.status()["streams"][stream]["event_open"], "the event is not open after "
                  "the restart")
            wait_until(lambda: counters(d)["alertmanager_sent"] >= 2, 10,
                       "the restored event's alert to be re-sent (twice)")
            now = ours(am.alerts(), stream)
            check(len(now) == 1 and now[0]["status"]["state"] == "active" and
                  now[0]["startsAt"] == first["startsAt"],
                  "after the restart: %s (before: %s)" % (now, first))
            sock = env.pusher(d.ingest)
            env.send_series(sock, stream, values[held:], batch=32, first_seq=held)
            d.wait_samples({stream: N})
            wait_until(lambda: not ours(am.alerts(), stream), 15, "the alert to resolve")
            c = counters(d)
        check(c["alertmanager_open"] == 0 and c["alertmanager_resolved"] >= 1 and
              c["alertmanager_failures"] == 0, "counters %s" %
              {k: v for k, v in c.items() if k.startswith("alertmanager")})
        print("# open across a restart: re-sent %d times by the new process, startsAt kept (%s),"
              " resolved by its ANOMALY_END" % (c["alertmanager_sent"], first["startsAt"]))
    return run_with_am(env, body)


def case_deleted(env):
    def body(hook, am):
        am.start()
        values = series(random.Random(SEED))
        stream = "site/pump-4"
        with daemon(env, [am.url]) as d:
            sock = env.pusher(d.ingest)
            feed_until_anomaly(env, d, sock, stream, values)
            wait_until(lambda: ours(am.alerts(), stream), 10, "the alert")
            env.tsmine_run("delete", "--endpoint", d.control, "-s", stream)
            t0 = time.monotonic()
            wait_until(lambda: not ours(am.alerts(), stream), 10,
                       "the deleted stream's alert to resolve")
            took = time.monotonic() - t0
            res = wait_until(lambda: [x for x in ours(hook.alerts(), stream)
                                      if x["status"] == "resolved"], 10,
                             "the webhook's resolved notification")
            c = counters(d)
        # the engine ends a removed stream's open event (its ANOMALY_END), so the
        # alert resolves as any other; the orphan sweep stays for a lost ANOMALY_END
        check(c["alertmanager_orphaned"] == 0 and c["alertmanager_open"] == 0 and
              c["alertmanager_resolved"] >= 1,
              "counters %s" % {k: v for k, v in c.items() if k.startswith("alertmanager")})
        check("closed without its end" not in res[-1]["annotations"]["summary"],
              "resolved notification %s" % res[-1])
        print("# a deleted stream's open alert resolved %.1f s after `tsmine delete` "
              "(its ANOMALY_END)" % took)
    return run_with_am(env, body)


def make_ca(folder):
    """A test CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    def ossl(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=folder)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=tsmine test CA")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(folder, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    return [os.path.join(folder, n) for n in ("ca.crt", "server.crt", "server.key")]


def case_tls_auth(env):
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import crypt
        hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH))
    except (ImportError, AttributeError, TypeError) as e:
        print("SKIP: no bcrypt from python3's crypt (%s)" % e)
        return 77
    if not shutil.which("openssl"):
        print("SKIP: no openssl to make a test CA")
        return 77

    def body(hook, am):
        ca, cert, key = make_ca(env.dir)
        am.secure(ca, cert, key, "tsmine", "s3cret", hashed)
        am.start()
        good, bad = (os.path.join(env.dir, n) for n in ("good.pw", "bad.pw"))
        for path, pw in ((good, "s3cret\n"), (bad, "wrong\n")):
            with open(path, "w") as f:
                f.write(pw)
        values = series(random.Random(SEED))
        with daemon(env, [am.url], name="good", username="tsmine", password_file=good,
                    ca_file=ca) as d:
            sock = env.pusher(d.ingest)
            feed_until_anomaly(env, d, sock, "tls/good", values)
            got = wait_until(lambda: ours(am.alerts(), "tls/good"), 10, "the alert over https")
            c = counters(d)
        check(got[0]["status"]["state"] == "active" and c["alertmanager_failures"] == 0,
              "state %s, counters %s" % (got[0]["status"], c))
        with daemon(env, [am.url], name="bad", username="tsmine", password_file=bad,
                    ca_file=ca) as d:
            sock = env.pusher(d.ingest)
            feed_until_anomaly(env, d, sock, "tls/bad", values)
            wait_until(lambda: counters(d)["alertmanager_rejected"] >= 1, 10,
                       "the refused alert (HTTP 401) to be counted")
            check(not ours(am.alerts(), "tls/bad"), "an alert with a wrong password got in")
        with daemon(env, [am.url], name="noca") as d:  # the system's CAs do not know ours
            sock = env.pusher(d.ingest)
            feed_until_anomaly(env, d, sock, "tls/noca", values)
            wait_until(lambda: counters(d)["alertmanager_failures"] >= 1, 10,
                       "the failed TLS handshake to be counted")
            check(not ours(am.alerts(), "tls/noca"), "an alert got in without the CA")
        print("# https with the test CA and basic auth: delivered; wrong password: refused "
              "(401, counted as rejected); without the CA: failed (counted)")
    return run_with_am(env, body)


def case_latency(env):
    def body(hook, am):
        am.start()
        rng = random.Random(SEED + 1)
        lat, det, closed = [], [], 0
        with daemon(env, [am.url]) as d:
            sock = env.pusher(d.ingest)
            for k in range(5):
                stream = "lat/%d" % k
                values = series(rng)
                env.send_series(sock, stream, values[:AT], batch=32)
                d.wait_samples({stream: AT})
                sent, wall, seen, done_polling = {}, {}, [], threading.Event()
                resolved0 = counters(d)["alertmanager_resolved"]

                def poll(seen=seen, stream=stream, done_polling=done_polling):
                    while not seen and not done_polling.is_set():
                        try:
                            mine = ours(am.alerts(), stream)
                        except OSError:  # Alertmanager's API reset a poll: poll again
                            mine = []
                        if mine:  # one append: the sender loop breaks on seen
                            seen.append((time.monotonic(), mine[0]))
                        time.sleep(0.005)
                t = threading.Thread(target=poll, daemon=True)
                t.start()
                for i in range(AT, AT + WIDTH):
                    sent[i], wall[i] = time.monotonic(), time.time()
                    sock.send(env.batch(stream, i, values[i:i + 1]))
                    time.sleep(0.005)
                    if seen:
                        break
                def seen_or_closed():
                    """The alert seen active, or the event closed and its alert resolved:
                    under valgrind the daemon may process the samples that open and close
                    the event in one tick, and the alert reaches Alertmanager resolved,
                    never in its list of active alerts (counted, not timed)."""
                    if seen:
                        return True
                    st = d.status()
                    s = st["streams"].get(stream, {})
                    return (s.get("events", 0) >= 1 and not s.get("event_open") and
                            st["counters"]["alertmanager_resolved"] > resolved0)
                wait_until(seen_or_closed, 10, "the alert for %s" % stream)
                done_polling.set()
                t.join(10)
                if not seen:
                    closed += 1
                    continue
                # the alert as first seen: samples still queued behind the ANOMALY may
                # close the event, and a resolved alert leaves the list
                t_seen, got = seen[0]
                a = got["annotations"]
                done = int(a["start_seq"]) + int(a["length"]) - 1  # the ANOMALY's detected_seq
                check(done in sent, "the alert's subsequence ends at %d, not in the paced part"
                      % done)
                lat.append(t_seen - sent[done])
                # startsAt: when tsmined published the ANOMALY (CLOCK_REALTIME, ms)
                det.append(iso_seconds(got["startsAt"]) - wall[done])
        check(len(lat) >= 3, "%d of 5 alerts seen active in time (%d resolved first)" %
              (len(lat), closed))
        lat.sort()
        det.sort()
        mid = len(lat) // 2
        print("# latency sample->Alertmanager API (%d streams, poll 5 ms; %d resolved before "
              "a poll saw them): min %.1f ms, median %.1f ms, max %.1f ms; of which "
              "sample->ANOMALY (startsAt, ms clock): median %.1f ms" %
              (len(lat), closed, 1e3 * lat[0], 1e3 * lat[mid], 1e3 * lat[-1], 1e3 * det[mid]))
        check(lat[-1] < 5.0 * harness.SLOW, "latency %.2f s" % lat[-1])
    return run_with_am(env, body)


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, {"fire_resolve": case_fire_resolve,
                                         "down_then_up": case_down_then_up,
                                         "tls_auth": case_tls_auth,
                                         "restart": case_restart,
                                         "deleted": case_deleted,
                                         "latency": case_latency}))
