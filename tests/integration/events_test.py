#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""events_test.py - tsmined's detection semantics end to end (DESIGN 5.3, issue 16):
alerts are events on a calibrated score, with an automatic m, through the real daemon
on loopback, an independent ZeroMQ client and the real `tsmine` tool.

    events_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases (the daemon's detection defaults unless said: W 4096, subsequence auto, warmup
300, threshold 0.997, hop 1024, motif on):
  planted        a noisy sine of period 24 with a burst planted after the warm-up: one
                 ANOMALY whose subsequence overlaps the burst, published while the feed
                 is held 2m samples past it, then one ANOMALY_END whose extent covers
                 it and nothing else for that event; `tsmine status` shows the m that
                 tsm_auto_m chooses from the warm-up samples (the batch tool's
                 `-m auto` reports it), calibrated, events >= 1.
  detect_daemon  `tsmine detect -c` the daemon's own configuration over files (a NAB
                 feed, a noisy periodic series with planted anomalies, one with missing
                 values) prints exactly the alert lines `tsmine alerts` prints for the
                 same files sent with `tsmine replay` (issue 16 item 4): every field
                 equal but alert_id, detected_at_ns and start_timestamp_ns, which is
                 equal relative to the stream's first timestamp (one stream takes a
                 window of its own, shorter than detect's batches).
  motif_discord  with motif on and a pass every 256 samples: a stream's MOTIF alerts
                 never name overlapping pairs twice; a DISCORD never overlaps an event's
                 extent or another DISCORD of its stream (under TSMINE_DAEMON_WRAPPER,
                 valgrind, over 2/5 of the feeds, at least 8,000 samples each).
  short_feed     1,500 samples into a 4,096-sample window: the stream calibrates, its
                 planted anomaly opens an ANOMALY and its first pass runs at hop.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import json
import math
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time

import harness
from harness import Failure, check, events_of, wait_until

SEED = 20261127


def noisy_sine(rng, n, period, noise):
    return [math.sin(2 * math.pi * k / period) + rng.gauss(0, noise) for k in range(n)]


def write_csv(path, values):
    """One value per line under a header; None is a missing value (an empty field)."""
    with open(path, "w") as f:
        f.write("timestamp,value\n")
        for k, v in enumerate(values):
            f.write("%d,%s\n" % (k, "" if v is None else repr(v)))
    return path


def auto_m(env, values):
    """The m and period that tsm_auto_m (kernels/period.h) gives the daemon for a warm-up
    history: the batch tool's `-m auto` runs the same estimator (over [8, n / 4], which
    sees every period the daemon's [8, warmup / 3] does: periods up to n / 6) and says
    which on stderr; without a period the daemon falls back to 16 (stream/params.h)."""
    path = os.path.join(env.dir, "warmup.f64")
    with open(path, "wb") as f:
        f.write(struct.pack("<%dd" % len(values), *values))
    err = env.tsmine_run("discord", "-m", "auto", "--backend", "cpu", path).stderr
    got = re.search(r"m = (\d+) \(period (\d+)\)", err)
    if got:
        check(int(got.group(2)) <= len(values) // 3, "period %s beyond warmup / 3" % got.group(2))
        return int(got.group(2)), int(got.group(2))
    check("no period" in err, "tsmine discord -m auto said: %r" % err)
    return 16, 0


def nab_values(path):
    """The values of a bundled NAB feed (the last CSV column, header skipped)."""
    with open(path) as f:
        return [float(r.rsplit(",", 1)[1]) for r in f.read().split("\n")[1:] if r.strip()]


def alerts_of(got, stream, kind=None):
    return [a for s, a in got if s == stream and (kind is None or a.kind == kind)]


def settle(d, count_alerts, streams, timeout=60):
    """Waits until the daemon processed every sample it counted and count_alerts(s)
    equals its alert count for every stream (the PUB socket delivers a little after)."""
    def done():
        full = d.status()
        st = full["streams"]
        return full["counters"]["pending_samples"] == 0 and full["counters"][
            "pending_passes"] == 0 and all(
            s in st and st[s]["alerts"] == count_alerts(s) for s in streams)
    wait_until(done, timeout, "every counted alert to arrive", step=0.1)


def pairs_overlap(a, b, c, d, excl):
    """Whether two motif pairs share a member (within excl), as stream/passes.c says."""
    return any(abs(x - y) < excl for x in (a, b) for y in (c, d))


# ---- cases ------------------------------------------------------------------------------

def case_planted(env):
    rng = random.Random(SEED)
    n, period, at, width = 3000, 24, 1500, 24
    values = noisy_sine(rng, n, period, 0.2)
    for k in range(at, at + width):  # a burst: the sine's own noise grows fivefold
        values[k] += rng.gauss(0, 1.0)
    m, p = auto_m(env, values[:harness.DEFAULT_WARMUP])
    check(p == period, "the batch tool finds period %d in the warm-up, not %d" % (p, period))
    stream = "site/planted"

    def overlapping(alerts):
        return [a for a in alerts if a.kind == env.pb.ANOMALY and
                a.start_seq < at + width and a.start_seq + a.length > at]
    with env.daemon() as d, harness.Subscriber(env, d.alerts, "site/") as sub:
        time.sleep(0.5)  # the subscription reaches the PUB socket
        sock = env.pusher(d.ingest)
        held = at + width + 2 * m  # the feed stops here until the ANOMALY came
        env.send_series(sock, stream, values[:held], batch=32)
        try:
            wait_until(lambda: overlapping(alerts_of(sub.get(), stream)), 10,
                       "an ANOMALY on the burst")
        except Failure:
            raise Failure("no ANOMALY on the burst [%d, %d) while the feed was held at %d "
                          "(alerts: %s)" % (at, at + width, held,
                                            [(env.pb.AlertKind.Name(a.kind), a.start_seq)
                                             for a in alerts_of(sub.get(), stream)]))
        env.send_series(sock, stream, values[held:], batch=32, first_seq=held)
        d.wait_samples({stream: n})
        settle(d, lambda s: len(alerts_of(sub.get(), s)), [stream])
        st = json.loads(env.tsmine_run("status", "--endpoint", d.control, "--stream",
                                       stream).stdout)["streams"][stream]
        got = alerts_of(sub.get(), stream)

    check(st["subsequence_auto"] is True and st["subsequence"] == m and st["period"] == p and
          st["calibrated"] is True and st["events"] >= 1 and st["window_fill"] == n,
          "tsmine status: %s; tsm_auto_m gives m %d (period %d)" % (st, m, p))
    over = overlapping(got)
    check(len(over) == 1, "%d ANOMALY alerts overlap the burst: %s" %
          (len(over), [a.start_seq for a in over]))
    a = over[0]
    check(a.detected_seq < held and a.length == m, "ANOMALY at %d: detected at %d, m %d; the "
          "burst ends at %d, m = %d" % (a.start_seq, a.detected_seq, a.length, at + width, m))
    ev = [e for e in events_of(env.pb, got, stream) if e.anomaly is a][0]
    check(ev.end is not None and ev.first <= at and ev.end >= at + width,
          "the event of the burst [%d, %d): extent [%d, %s)" % (at, at + width, ev.first, ev.end))
    # nothing for that event between its ANOMALY and its ANOMALY_END (the passes run on:
    # a MOTIF elsewhere may come)
    for x in got[got.index(ev.anomaly) + 1:got.index(ev.end_alert)]:
        check(x.kind == env.pb.MOTIF and not any(ev.overlaps(y, y + x.length)
                                                 for y in (x.start_seq, x.neighbor_seq)),
              "%s at %d between the ANOMALY and the ANOMALY_END of [%d, %d)" %
              (env.pb.AlertKind.Name(x.kind), x.start_seq, ev.first, ev.end))
    print("# m %d (period %d), %d events; the burst [%d, %d): ANOMALY at %d detected at %d, "
          "extent [%d, %d)" % (m, p, st["events"], at, at + width, a.start_seq,
                               a.detected_seq, ev.first, ev.end))


def detect_inputs(env, rng):
    """The files of detect_daemon: {stream id (the file's base name): (path, samples)}."""
    periodic = noisy_sine(rng, 6000, 30, 0.15)
    for k in range(2000, 2030):  # a burst, a flat stretch, a spike
        periodic[k] += rng.gauss(0, 0.8)
    for k in range(3500, 3540):
        periodic[k] = periodic[3500]
    periodic[5000] += 3.0
    gappy = noisy_sine(rng, 5000, 20, 0.2)
    for k in range(4200, 4220):
        gappy[k] += rng.gauss(0, 0.8)
    for k in list(range(1800, 1840)) + [3300]:  # missing: two gaps
        gappy[k] = None
    nyc = os.path.join(env.data, "nyc_taxi.csv")  # as bundled: header, timestamps
    out = {"nyc_taxi": (nyc, len(nab_values(nyc)))}
    for name, v in (("periodic", periodic), ("gappy", gappy)):
        out[name] = (write_csv(os.path.join(env.dir, name + ".csv"), v),
                     sum(x is not None for x in v))
    return out


UNCOMPARED = ("alert_id", "detected_at_ns", "start_timestamp_ns")


def case_detect_daemon(env):
    rng = random.Random(SEED + 1)
    inputs = detect_inputs(env, rng)
    period_ns = 1000000000
    path = os.path.join(env.dir, "daemon.jsonl")

    def published():
        with open(path) as f:
            return [json.loads(x) for x in f if x.endswith("\n")]
    # hop 512: more windowed passes (DISCORD, MOTIF) than the default gives these lengths;
    # an override gives gappy a window shorter than detect's batches of 256 (so it feeds
    # it in batches of the window: the engine takes no more at once)
    small = {"window": 200, "warmup": 120, "hop": 64}
    with env.daemon(params={"hop": 512}, overrides=[("gappy", small)]) as d, \
            open(path, "w") as out:
        tool = subprocess.Popen([env.tsmine, "alerts", "--endpoint", d.alerts], stdout=out,
                                stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.5)  # the subscription reaches the PUB socket
            for sid, (f, _) in inputs.items():
                env.tsmine_run("replay", "--endpoint", d.ingest, "--stream", sid,
                               "--period-ns", period_ns, "--batch", 100, f)
            d.wait_samples({sid: n for sid, (_, n) in inputs.items()})
            settle(d, lambda s: sum(a["stream_id"] == s for a in published()), inputs)
        finally:
            tool.send_signal(signal.SIGTERM)
            _, err = tool.communicate(timeout=10)
        check(tool.returncode == 0, "tsmine alerts: exit %d: %s" % (tool.returncode, err))
        detect = env.tsmine_run("detect", "-c", d.conf, "--period-ns", period_ns,
                                *[f for f, _ in inputs.values()], timeout=300)
    daemon = published()
    offline = [json.loads(x) for x in detect.stdout.splitlines()]
    kinds = {}
    for sid in inputs:
        have = [a for a in daemon if a["stream_id"] == sid]
        want = [a for a in offline if a["stream_id"] == sid]
        check(len(have) == len(want), "%s: the daemon published %d alerts, tsmine detect %d" %
              (sid, len(have), len(want)))
        # each kind in the same order; across kinds the daemon's order may differ (its
        # passes run on a thread beside the rounds: stream/engine.h, "Alert order"), so
        # seq, which counts every kind, is compared as a permutation of 1..n
        check(sorted(a["seq"] for a in have) == list(range(1, len(have) + 1)),
              "%s: the daemon's seq is not 1..%d" % (sid, len(have)))
        t0 = None  # the daemon's first timestamp of the stream (replay starts at its clock)
        for kind in sorted({a["kind"] for a in want}):
            hk = [a for a in have if a["kind"] == kind]
            wk = [a for a in want if a["kind"] == kind]
            check(len(hk) == len(wk), "%s: %d %s alerts from the daemon, %d from detect" %
                  (sid, len(hk), kind, len(wk)))
            for k, (x, y) in enumerate(zip(hk, wk)):
                same = all(x.get(f) == y.get(f) for f in set(x) | set(y)
                           if f not in UNCOMPARED and f != "seq")
                check(same, "%s: %s alert %d differs:\n#   daemon %s\n#   detect %s" %
                      (sid, kind, k, x, y))
                if y["start_timestamp_ns"] == 0:  # none (a sample the window no longer holds)
                    check(x["start_timestamp_ns"] == 0, "%s: %s alert %d: timestamp %d, detect 0"
                          % (sid, kind, k, x["start_timestamp_ns"]))
                    continue
                t0 = x["start_timestamp_ns"] - y["start_timestamp_ns"] if t0 is None else t0
                check(x["start_timestamp_ns"] - y["start_timestamp_ns"] == t0,
                      "%s: %s alert %d: timestamp %d, detect %d (+ %d)" %
                      (sid, kind, k, x["start_timestamp_ns"], y["start_timestamp_ns"], t0))
        for a in have:
            kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
    for kind in ("ANOMALY", "ANOMALY_END", "DISCORD", "MOTIF", "GAP"):
        check(kinds.get(kind), "no %s alert to compare (the test is void): %s" % (kind, kinds))
    check(any(a["stream_id"] == "gappy" and a["kind"] == "ANOMALY" for a in daemon),
          "gappy (window %d) raised no ANOMALY: the override is void" % small["window"])
    print("# %d alerts equal, by kind %s" % (len(daemon), kinds))


def case_motif_discord(env):
    rng = random.Random(SEED + 2)
    feeds = {"nab/" + f[:-4]: nab_values(os.path.join(env.data, f))
             for f in ("machine_temperature_system_failure.csv", "nyc_taxi.csv")}
    syn = noisy_sine(rng, 12000, 40, 0.3)
    for at in range(1500, 12000, 1700):  # bursts and flat stretches in turn
        for k in range(at, at + 30):
            syn[k] = syn[at] if at % 2 else syn[k] + rng.gauss(0, 1.0)
    feeds["syn/sine"] = syn
    if harness.WRAPPER:  # under valgrind: the same invariants over fewer passes
        feeds = {sid: v[:max(8000, len(v) * 2 // 5)] for sid, v in feeds.items()}
    with env.daemon(params={"hop": 256}) as d, harness.Subscriber(env, d.alerts) as sub:
        time.sleep(0.5)
        sock = env.pusher(d.ingest)
        for sid, v in feeds.items():
            env.send_series(sock, sid, v, batch=500)
        d.wait_samples({sid: len(v) for sid, v in feeds.items()}, timeout=60)
        settle(d, lambda s: len(alerts_of(sub.get(), s)), feeds)
        got = sub.get()
    motifs = discords = 0
    for sid in feeds:
        mine = alerts_of(got, sid)
        pairs = [(a.start_seq, a.neighbor_seq, a.length, a.detected_seq) for a in mine
                 if a.kind == env.pb.MOTIF]
        for k, (a, b, m, at) in enumerate(pairs):
            for c, e, _, before in pairs[:k]:
                check(not pairs_overlap(a, b, c, e, m), "%s: MOTIF (%d, %d) at %d overlaps "
                      "(%d, %d) published at %d" % (sid, a, b, at, c, e, before))
        events_of(env.pb, mine, sid)  # the events' grammar
        spans = []
        for i, a in enumerate(mine):
            if a.kind != env.pb.DISCORD:
                continue
            # DESIGN 5.3: a DISCORD overlaps nothing the stream published before it (an
            # event that opens later on the same episode, from the magnitude view that
            # saw it after the pass's shape view did, may overlap it)
            x, y = a.start_seq, a.start_seq + a.length
            for ev in events_of(env.pb, mine[:i], sid):
                check(not ev.overlaps(x, y), "%s: DISCORD [%d, %d) overlaps the event [%d, %s)"
                      % (sid, x, y, ev.first, ev.end))
            for u, w in spans:
                check(y <= u or w <= x, "%s: DISCORD [%d, %d) overlaps the DISCORD [%d, %d)" %
                      (sid, x, y, u, w))
            spans.append((x, y))
        motifs += len(pairs)
        discords += len(spans)
    check(motifs > 0 and discords > 0, "%d MOTIF and %d DISCORD alerts: the test is void" %
          (motifs, discords))
    print("# %d MOTIF alerts, no pair twice; %d DISCORD alerts apart from each other and from "
          "the events before them" % (motifs, discords))


def case_short_feed(env):
    rng = random.Random(SEED + 3)
    n, at = 1500, 1000
    values = noisy_sine(rng, n, 24, 0.2)
    for k in range(at, at + 24):
        values[k] += rng.gauss(0, 1.0)
    stream = "short/1"
    with env.daemon() as d, harness.Subscriber(env, d.alerts) as sub:
        time.sleep(0.5)
        sock = env.pusher(d.ingest)
        env.send_series(sock, stream, values, batch=100)
        d.wait_samples({stream: n})
        settle(d, lambda s: len(alerts_of(sub.get(), s)), [stream])
        st = d.status()["streams"][stream]
        got = alerts_of(sub.get(), stream)
    check(st["window"] == 4096 and st["window_fill"] == n and st["calibrated"],
          "a feed of %d samples into a window of %d: %s" % (n, st["window"], st))
    events = events_of(env.pb, got, stream)
    check(any(e.overlaps(at, at + 24) for e in events), "no event over the anomaly at %d: %s"
          % (at, [(e.first, e.end) for e in events]))
    first = [a.detected_seq for a in got if a.kind in (env.pb.MOTIF, env.pb.DISCORD)]
    check(first and first[0] == 1023, "no windowed pass at hop = 1024 samples: %s" % first)
    print("# %d samples, window %d: %d events, first pass at sample %d" %
          (n, st["window"], len(events), first[0]))


CASES = {f.__name__[5:]: f for f in (case_planted, case_detect_daemon, case_motif_discord,
                                     case_short_feed)}


def main():
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
