#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""daemon_test.py - integration tests of tsmined through its real interfaces (DESIGN 5,
7; issue 4 item 8): the real daemon on free loopback ports, an independent Python
client (pyzmq + protobuf generated from proto/tsmine.proto) and the real `tsmine`
replay/alerts/status commands.

    daemon_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Each case is one ctest entry. Prints `ok - NAME` or `not ok - NAME` with the reason
(and the daemon's log); exits 0, 1, or 77 when the case cannot run here (skipped).
Data is generated from a fixed seed, printed on failure.
"""

import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import harness
from harness import (Failure, check, check_left_nn, events_of, expected_discords, rel_close,
                     wait_until)

SEED = 20240611


def random_walk(rng, n, anomalies=(), m=32):
    """A random walk of n steps with a burst of white noise (the anomaly) of length m
    at each position in anomalies."""
    x, out = 0.0, []
    for _ in range(n):
        x += rng.gauss(0, 1)
        out.append(x)
    for p in anomalies:
        base = out[p]
        for k in range(m):
            out[p + k] = base + rng.gauss(0, 3)
    return out


def sine(n, period, phase=0.0):
    return [math.sin(2 * math.pi * (k + phase) / period) for k in range(n)]


def nab_series(env, name):
    """The values of a bundled NAB feed (the last CSV column, header skipped)."""
    with open(os.path.join(env.data, name)) as f:
        rows = f.read().split("\n")[1:]
    return [float(r.rsplit(",", 1)[1]) for r in rows if r.strip()]


def alerts_of(alerts, stream, kind=None):
    return [a for s, a in alerts if s == stream and (kind is None or a.kind == kind)]


def check_stream(env, got, values, p, stream):
    """The alerts of a stream with a fixed range (DESIGN 5.3, harness.py): its events
    follow the ANOMALY / ANOMALY_END grammar and each one's subsequence is the exact
    left-NN distance >= range that opened it; its DISCORD alerts equal the batch tool's
    range discords of the same windows, each published once, best first, apart from
    everything published before (events included): same absolute positions, distances
    within 1e-9 relative, same neighbours. Returns the number of DISCORDs."""
    mine = alerts_of(got, stream)
    events = events_of(env.pb, mine, stream)
    for ev in events:
        check(ev.anomaly.distance >= p["range"], "%s: ANOMALY at %d: distance %g < range %g" %
              (stream, ev.first, ev.anomaly.distance, p["range"]))
        check(ev.anomaly.detected_seq + 1 >= harness.warm(p), "%s: ANOMALY at %d before the "
              "window held its warm-up" % (stream, ev.first))
        check_left_nn(values, ev.anomaly, p["window"], "%s: ANOMALY" % stream)
    disc = [a for a in mine if a.kind == env.pb.DISCORD]
    want = expected_discords(env, values, p, events)
    have = {a.start_seq: (a.distance, a.neighbor_seq) for a in disc}
    check(len(have) == len(disc), "%s: a DISCORD position was published twice" % stream)
    check(sorted(have) == sorted(want), "%s: DISCORD positions %s, batch tool %s" %
          (stream, sorted(have), sorted(want)))
    for pos, (d, j) in want.items():
        hd, hj = have[pos]
        check(rel_close(hd, d), "%s: DISCORD at %d: distance %.17g, batch tool %.17g" %
              (stream, pos, hd, d))
        check(hj == j, "%s: DISCORD at %d: neighbour %d, batch tool %d" % (stream, pos, hj, j))
    return len(want)


def settle_alerts(d, sub, streams, timeout=15):
    """Waits until the daemon has processed every sample it accepted (none pending: the
    alerts they raise are counted; "samples" counts them on arrival, before a tick) and
    the subscriber holds as many alerts per stream as the daemon counts (the PUB socket
    may deliver a little after the count)."""
    def done():
        full = d.status()
        if full["counters"]["pending_samples"] or full["counters"]["pending_passes"]:
            return False
        st = full["streams"]
        got = sub.get()
        for s in streams:
            if st[s]["alerts"] != len(alerts_of(got, s)):
                return False
        return True
    wait_until(done, timeout, "the subscriber to receive every counted alert", step=0.1)


# ---- cases ------------------------------------------------------------------------------

def case_ingest(env):
    """NAB feeds through `tsmine replay` and synthetic streams through the Python client,
    concurrently; an independent subscriber and `tsmine alerts`; sent = counted; the
    fixed-range streams' events are exact left-NN distances past the range and their
    DISCORD alerts equal the batch tool on the same windows (check_stream)."""
    p = {"window": 512, "subsequence": 32, "hop": 128, "range": 6.0, "motif": False}
    nab = {"window": 1024, "subsequence": 64, "hop": 256, "range": float("nan")}
    rng = random.Random(SEED)
    syn = {"syn/%d" % i: random_walk(rng, 2048 + 128 * i, (700 + 97 * i, 1500 + 50 * i), 32)
           for i in range(4)}
    feeds = ["art_daily_jumpsup.csv", "machine_temperature_system_failure.csv", "nyc_taxi.csv"]
    with env.daemon(params=p, overrides=[("nab/*", nab)]) as d:
        sub = harness.Subscriber(env, d.alerts)
        out = open(os.path.join(env.dir, "alerts.jsonl"), "w")
        tool = subprocess.Popen([env.tsmine, "alerts", "--endpoint", d.alerts, "--stream", "syn/"],
                                stdout=out, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # the subscriptions reach the PUB socket
        # the feeds' own timestamps; machine_temperature's clock steps back an hour at
        # line 10151 (NAB's data), which --backwards hold sends with the one before
        replays = [subprocess.Popen([env.tsmine, "replay", "--endpoint", d.ingest, "--stream",
                                     "nab/" + f[:-4], "--batch", "200", "--backwards", "hold",
                                     os.path.join(env.data, f)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for f in feeds]
        sock = env.pusher(d.ingest)
        for i in range(0, max(map(len, syn.values())), p["hop"]):
            for s, v in syn.items():  # interleaved, one hop per message
                if i < len(v):
                    sock.send(env.batch(s, i, v[i:i + p["hop"]]))
            time.sleep(0.03)
        for r in replays:
            _, err = r.communicate(timeout=60)
            check(r.returncode == 0, "tsmine replay: exit %d: %s" % (r.returncode, err))
        expect = {s: len(v) for s, v in syn.items()}
        expect.update({"nab/" + f[:-4]: len(nab_series(env, f)) for f in feeds})
        d.wait_samples(expect)
        settle_alerts(d, sub, expect)
        st = d.status()
        check(not any(st["rejected"].values()), "rejections: %s" % st["rejected"])

        got = sub.get()
        n = sum(check_stream(env, got, v, p, s) for s, v in syn.items())
        check(n > 0, "the synthetic streams produced no DISCORD at all (the test is void)")
        events = sum(len(alerts_of(got, s, env.pb.ANOMALY)) for s in syn)
        check(events > 0, "the synthetic streams produced no ANOMALY at all (the test is void)")
        for s, a in got:
            check(s == a.stream_id, "topic %r carries an alert of %r" % (s, a.stream_id))

        # `tsmine status` prints what the control socket says.
        js = json.loads(env.tsmine_run("status", "--endpoint", d.control).stdout)
        for s, want in expect.items():
            check(js["streams"][s]["samples"] == want, "tsmine status: %s samples %s, sent %d" %
                  (s, js["streams"][s]["samples"], want))
        one = json.loads(env.tsmine_run("status", "--endpoint", d.control, "--stream",
                                        "syn/0").stdout)
        check(list(one["streams"]) == ["syn/0"], "tsmine status --stream: %s" % one["streams"])

        # `tsmine alerts` printed exactly the syn/ alerts the subscriber got.
        time.sleep(0.3)
        tool.send_signal(signal.SIGTERM)
        _, err = tool.communicate(timeout=10)
        out.close()
        check(tool.returncode == 0, "tsmine alerts: exit %d: %s" % (tool.returncode, err))
        with open(out.name) as f:
            lines = [json.loads(x) for x in f]
        mine = sorted(a.alert_id for s, a in got if s.startswith("syn/"))
        check(sorted(x["alert_id"] for x in lines) == mine,
              "tsmine alerts printed %d alerts, the subscriber got %d" % (len(lines), len(mine)))
        kinds = {a.alert_id: env.pb.AlertKind.Name(a.kind) for s, a in got}
        for x in lines:
            check(x["kind"] == kinds[x["alert_id"]], "tsmine alerts: kind %s" % x)
        sub.close()
        print("# %d DISCORD alerts and %d events compared, %d alerts in all, %d samples" %
              (n, events, len(got), sum(expect.values())))


def case_thousand(env):
    """1,000 streams at once: every stream's sample count is its own; alerts appear
    exactly on the streams with a planted anomaly, one event each that overlaps it, and
    (check_stream) exact events and DISCORDs equal to the batch tool."""
    p = {"window": 64, "subsequence": 8, "hop": 32, "warmup": 48, "range": 1.0,
         "motif": False, "left_discord": False}
    rng = random.Random(SEED)
    streams = {}
    for i in range(1000):
        v = sine(96 + (i % 7) * 16, 16, phase=i % 16)
        if i % 10 == 3:
            for k in range(60, 68):
                v[k] = rng.uniform(-1.5, 1.5)
        streams["k/%04d" % i] = v
    with env.daemon(overrides=[("k/*", p)]) as d:
        sub = harness.Subscriber(env, d.alerts, "k/")
        time.sleep(0.5)
        items = sorted(streams.items())

        def push(part):  # one PUSH socket per thread, each a quarter of the streams
            sock = env.pusher(d.ingest)
            for off in range(0, 208, p["hop"]):
                for s, v in part:
                    if off < len(v):
                        sock.send(env.batch(s, off, v[off:off + p["hop"]]))
            sock.close()
        threads = [threading.Thread(target=push, args=(items[q::4],)) for q in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        d.wait_samples({s: len(v) for s, v in streams.items()}, timeout=60)
        settle_alerts(d, sub, streams)
        got = sub.get()
        alerted = {s for s, a in got}
        anomalous = {s for i, s in enumerate(sorted(streams)) if i % 10 == 3}
        extra = sorted(alerted - anomalous)
        first = ["%s at %d" % (env.pb.AlertKind.Name(a.kind), a.start_seq)
                 for a in alerts_of(got, extra[0])] if extra else ""
        check(alerted == anomalous, "alerts on %d streams, %d have an anomaly; e.g. "
              "unexpected %s (%s), missing %s" % (len(alerted), len(anomalous), extra[:3],
                                                  first, sorted(anomalous - alerted)[:3]))
        for s in sorted(anomalous):
            ev = events_of(env.pb, alerts_of(got, s), s)
            check(len(ev) == 1 and ev[0].end is not None and ev[0].overlaps(60, 68),
                  "%s: events %s, one closed over the anomaly [60, 68) expected" %
                  (s, [(e.first, e.end) for e in ev]))
        n = sum(check_stream(env, got, streams[s], p, s) for s in sorted(anomalous)[:20])
        print("# %d events, each over its anomaly; %d DISCORDs compared" % (len(anomalous), n))
        st = d.status()["streams"]
        for s, v in streams.items():
            check(st[s]["next_seq"] == len(v), "%s: next_seq %d, sent %d" %
                  (s, st[s]["next_seq"], len(v)))
        sub.close()


def case_reject(env):
    """Malformed, oversized, NaN-laden, newer-schema, empty, out-of-order and duplicate
    messages are counted under their reasons while another stream keeps flowing."""
    p = {"window": 256, "subsequence": 16, "hop": 64, "warmup": 128, "range": 3.0}
    rng = random.Random(SEED)
    good = random_walk(rng, 1280)
    with env.daemon(params=p, limits={"max_message_size": 65536}) as d:
        sub = harness.Subscriber(env, d.alerts, "seq")
        time.sleep(0.5)
        sock = env.pusher(d.ingest)
        bad = env.pusher(d.ingest)
        pb = env.pb
        bads = [
            b"\xff\xff\xff\xff\xff",  # field 31 with wire type 7: not protobuf
            env.batch("bad/nan", 0, [1.0, 2.0, float("nan"), 4.0]),
            pb.SampleBatch(schema_version=99, stream_id="bad/v", values=[1.0]).SerializeToString(),
            pb.SampleBatch(schema_version=1, stream_id="bad/empty").SerializeToString(),
            env.batch("", 0, [1.0, 2.0]),
        ]
        seq = random_walk(rng, 256)
        seq_msgs = [(0, 64), (128, 192), (64, 80), (0, 16), (192, 256)]  # gap, late, dup
        for i in range(0, len(good), 64):
            sock.send(env.batch("good", i, good[i:i + 64]))
            k = i // 64
            if k < len(bads):
                bad.send(bads[k])
            if k < len(seq_msgs):
                a, b = seq_msgs[k]
                bad.send(env.batch("seq", a, seq[a:b]))
        # Oversized: on its own connection (libzmq may drop a connection that sends it).
        big = env.pusher(d.ingest)
        big.send(env.batch("bad/big", 0, [0.5] * 10000))
        d.wait_samples({"good": len(good), "seq": 192})
        # `tsmine replay` leaves a missing value out as a gap; with --nonfinite send the
        # daemon rejects the message that holds it.
        csv = os.path.join(env.dir, "nan.csv")
        with open(csv, "w") as f:
            f.write("timestamp,value\n" + "".join("%d,%r\n" % (1396310400 + k, x)
                                                   for k, x in enumerate(good[:300]))
                    .replace(repr(good[100]), "nan"))
        env.tsmine_run("replay", "--endpoint", d.ingest, "--stream", "file/gap", csv)
        env.tsmine_run("replay", "--endpoint", d.ingest, "--stream", "file/send",
                       "--nonfinite", "send", "--batch", "50", csv)
        d.wait_samples({"file/gap": 299, "file/send": 250})
        fg = d.status()["streams"]["file/gap"]
        check(fg["gaps"] == 1 and fg["next_seq"] == 300, "replay of a NaN: %s" % fg)
        want = {"decode": 1, "nonfinite": 2, "schema_version": 1, "empty": 1, "bad_id": 1,
                "out_of_order": 1, "duplicate": 1, "oversized": 1}
        try:
            wait_until(lambda: all(d.status()["rejected"].get(k, 0) >= 1 for k in want), 10,
                       "every rejection to be counted")
        except Failure as e:
            raise Failure("%s: %s" % (e, {k: v for k, v in d.status()["rejected"].items() if v}))
        rej = d.status()["rejected"]
        for k, n in want.items():
            check(rej.get(k, 0) == n, "rejected[%s] = %s, want %d (all: %s)" % (k, rej.get(k), n,
                                                                             rej))
        s = d.status()["streams"]["seq"]
        check(s["next_seq"] == 256 and s["gaps"] == 1 and s["rejected"] == 2,
              "stream seq: %s" % s)
        check("bad/nan" not in d.status()["streams"] or
              d.status()["streams"]["bad/nan"]["samples"] == 0, "bad/nan has samples")
        wait_until(lambda: alerts_of(sub.get(), "seq", pb.GAP), 5, "the GAP alert")
        gap = alerts_of(sub.get(), "seq", pb.GAP)
        check(len(gap) == 1 and gap[0].start_seq == 64 and gap[0].length == 64,
              "GAP alerts: %s" % [(a.start_seq, a.length) for a in gap])
        sub.close()


def same_number(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def noisy_sine(rng, n, period, noise):
    return [math.sin(2 * math.pi * k / period) + rng.gauss(0, noise) for k in range(n)]


def case_restart(env):
    """SIGTERM checkpoints every stream; the next start restores them with identical
    state (the score history, events and an automatic m included), and the streams go
    on from their next sequence number."""
    p = {"window": 256, "subsequence": 16, "hop": 64, "warmup": 128, "range": float("nan")}
    rng = random.Random(SEED)
    streams = {"r/%d" % i: random_walk(rng, 200 + 111 * i, (150,), 16) for i in range(6)}
    streams["r/auto"] = noisy_sine(rng, 700, 12, 0.2)
    keys = ("next_seq", "samples", "window_fill", "calibrated", "gaps", "window",
            "subsequence", "hop", "rejected", "subsequence_auto", "period", "warmup",
            "threshold", "event_open", "events")
    with env.daemon(params=p, overrides=[("r/auto", {"subsequence": "auto"})]) as d:
        sock = env.pusher(d.ingest)
        for s, v in streams.items():
            env.send_series(sock, s, v, batch=50)
        sock.send(env.batch("r/gap", 0, streams["r/0"][:100]))
        sock.send(env.batch("r/gap", 150, streams["r/0"][100:200]))
        sock.close()
        expect = {s: len(v) for s, v in streams.items()}
        expect["r/gap"] = 200
        d.wait_samples(expect)
        # "samples" counts on arrival: wait until every one is processed (under valgrind
        # the rounds lag the ingest by seconds; a restart would process the rest later)
        wait_until(lambda: not any(d.status()["counters"][k] for k in
                                   ("pending_samples", "pending_passes")),
                   30 * harness.SLOW, "the samples to be processed", step=0.05)
        before = d.status()["streams"]
        check(sum(x["calibrated"] for x in before.values()) >= 3,
              "too few streams calibrated to test the range: %s" % before)
        check(sum(x["events"] for x in before.values()) >= 1,
              "no stream opened an event to be restored: %s" % before)
        auto = before["r/auto"]
        check(auto["subsequence_auto"] and auto["period"] == auto["subsequence"] and
              8 <= auto["subsequence"] <= p["warmup"] // 3,
              "r/auto chose no period in [8, warmup / 3]: %s" % auto)
        rc = d.stop()
        check(rc == 0, "tsmined exited with %d on SIGTERM" % rc)
        d.start()
        after = d.status()["streams"]
        check(sorted(after) == sorted(before), "streams %s after restart, %s before" %
              (sorted(after), sorted(before)))
        for s in before:
            for k in keys:
                check(after[s][k] == before[s][k], "%s.%s: %s before, %s after restart" %
                      (s, k, before[s][k], after[s][k]))
            for k in ("range", "last_score"):
                check(same_number(after[s][k], before[s][k]), "%s.%s: %r before, %r after "
                      "restart" % (s, k, before[s][k], after[s][k]))
        sock = env.pusher(d.ingest)
        more = random_walk(rng, 64)
        for s in before:
            sock.send(env.batch(s, before[s]["next_seq"], more))
        d.wait_samples({s: before[s]["samples"] + 64 for s in before})
        st = d.status()
        check(not any(st["rejected"].values()), "rejections after restart: %s" % st["rejected"])


def case_reload(env):
    """SIGHUP applies a changed range and threshold; an invalid file on SIGHUP changes
    nothing."""
    p = {"window": 128, "subsequence": 8, "hop": 32, "warmup": 64, "range": 2.5}
    with env.daemon(overrides=[("h/*", p)]) as d:
        sock = env.pusher(d.ingest)
        env.send_series(sock, "h/1", sine(200, 20), batch=50)
        d.wait_samples({"h/1": 200})
        check(d.status()["streams"]["h/1"]["range"] == 2.5, "range before reload")
        check(d.status()["streams"]["h/1"]["threshold"] == 0.997, "threshold before reload")
        d.overrides = [("h/*", dict(p, range=4.0, threshold=0.99))]
        d.write_config()
        d.signal(signal.SIGHUP)
        wait_until(lambda: d.status()["streams"]["h/1"]["range"] == 4.0, 10,
                   "range 4.0 after SIGHUP (now %r)" % d.status()["streams"]["h/1"]["range"])
        check(d.status()["streams"]["h/1"]["threshold"] == 0.99, "threshold after reload")
        with open(d.conf, "a") as f:
            f.write("streams = { default = { window = -5; }; };\nbogus_key = 1;\n")
        d.signal(signal.SIGHUP)
        time.sleep(0.5)
        check(d.proc.poll() is None, "tsmined exited after a SIGHUP with an invalid file")
        check(d.status()["streams"]["h/1"]["range"] == 4.0 and
              d.status()["streams"]["h/1"]["threshold"] == 0.99,
              "an invalid file changed the range or the threshold")
        env.send_series(sock, "h/1", sine(50, 20), batch=50, first_seq=200)
        d.wait_samples({"h/1": 250})
        # A file that now sets only a small window: the subsequence, warm-up and hop it
        # leaves out follow it (tsmined.conf(5), "Streams"); one that also sets a
        # warm-up longer than the window is refused and changes nothing.
        d.overrides = [("h/*", {"window": 64})]
        d.write_config()
        d.signal(signal.SIGHUP)
        wait_until(lambda: d.status()["streams"]["h/1"]["window"] == 64, 10,
                   "window 64 after SIGHUP (now %r)" % d.status()["streams"]["h/1"]["window"])
        st = d.status()["streams"]["h/1"]
        check(st["warmup"] == 64 and st["hop"] == 64 and st["subsequence_auto"],
              "a file setting only window = 64: warmup %r, hop %r, subsequence_auto %r "
              "(want 64, 64, true)" % (st["warmup"], st["hop"], st["subsequence_auto"]))
        failures = d.status()["counters"]["reload_failures"]
        d.overrides = [("h/*", {"window": 64, "warmup": 300})]
        d.write_config()
        d.signal(signal.SIGHUP)
        wait_until(lambda: d.status()["counters"]["reload_failures"] == failures + 1, 10,
                   "window = 64 with warmup = 300 refused on SIGHUP")
        check(d.status()["streams"]["h/1"]["warmup"] == 64, "a refused reload changed warmup")
        env.send_series(sock, "h/1", sine(100, 20), batch=50, first_seq=250)
        d.wait_samples({"h/1": 350})


def case_notify(env):
    """READY=1 arrives on NOTIFY_SOCKET once the sockets answer, then WATCHDOG=1 at half
    of WATCHDOG_USEC."""
    if not env.have_systemd:
        print("# SKIP: tsmined was built without libsystemd")
        return 77
    path = os.path.join(env.dir, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(20)
    d = env.daemon(extra_env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    try:
        d.start(wait=False)
        seen = []
        while not any("READY=1" in x.split("\n") for x in seen):
            seen.append(ns.recv(4096).decode())
        check(d.status(timeout_ms=2000, fail=False) is not None,
              "READY=1 came before the control socket answered")
        t0 = time.monotonic()
        dogs = []
        ns.settimeout(2)
        while len(dogs) < 3:
            msg = ns.recv(4096).decode()
            if "WATCHDOG=1" in msg.split("\n"):
                dogs.append(time.monotonic() - t0)
        check(dogs[-1] < 1.5, "3 WATCHDOG=1 took %.2f s at WATCHDOG_USEC=0.4 s" % dogs[-1])
        print("# notifications: %s; WATCHDOG=1 at %s s" % (seen, ["%.2f" % x for x in dogs]))
        rc = d.stop()
        check(rc == 0, "tsmined exited with %d on SIGTERM" % rc)
    except socket.timeout:
        d.dump_log()
        raise Failure("no READY=1 / WATCHDOG=1 within the timeout")
    except BaseException:
        d.dump_log()
        raise
    finally:
        d.kill()
        ns.close()


CASES = {f.__name__[5:]: f for f in (case_ingest, case_thousand, case_reject, case_restart,
                                     case_reload, case_notify)}


def main():
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
