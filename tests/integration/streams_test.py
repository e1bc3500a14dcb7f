#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""streams_test.py - what one sender can do to the stream table of a real tsmined, and
how streams end (issue 17 items 4 and 5; stream/engine.h "Sequence numbers" and
"Stream lifetime"), through an independent ZeroMQ client and the real `tsmine` tool.

    streams_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  jam       the red team's jams: one batch at first_seq 2^62, one with a timestamp of
            INT64_MAX, one at a sequence number just past limits.max_seq_jump: each
            refused and counted (seq_jump, future_time); the real sender's next
            batches are accepted, also after a restart from the checkpoint. With the
            bound off, the 2^62 batch jams the stream (its real batches out_of_order)
            until `tsmine reset -s ID`: then the next batch starts it over (a RESET
            alert on the PUB) and the feed goes on.
  reboot    a sender that restarts its numbering at 0 with a newer epoch: a RESET alert
            (start_seq 0, neighbor_seq where the old run was), the stream goes on from
            there (status: its epoch, next_seq); a batch of the old epoch is
            stale_epoch. `tsmine delete -s ID` removes it (a later batch of that id is
            a new stream).
  flood     10,000 one-sample messages to new ids into a table of 2,000 (when_full
            evict_idle, evict_min_idle 1 s, idle expiry 3 s): resident memory grows by
            less than 60 MB (the red team measured ~3 GB for 10,000 on the old
            daemon), a real stream that warmed up before the flood keeps its state
            while it is fed, a new real stream is accepted into the full table, and the
            idle junk expires (streams_expired, streams_evicted count it).

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import math
import os
import random
import sys
import time

import harness
from harness import Failure, check, wait_until
from memory_test import RSS_BOUNDS, rss_bytes

SEED = 20261128
T0 = 1700000000000000000  # the harness's timestamps start here (2023): never ahead


def batch(env, stream, first_seq, values, epoch=0, t0=T0, period_ns=1000000):
    b = env.pb.SampleBatch(schema_version=1, stream_id=stream, first_seq=first_seq,
                           first_timestamp_ns=t0, period_ns=period_ns, values=values,
                           epoch=epoch)
    return b.SerializeToString()


def send(env, push, stream, first_seq, values, epoch=0, t0=T0, period_ns=1000000):
    """values as batches of at most 256 (under any window here), timestamps on."""
    for i in range(0, len(values), 256):
        push.send(batch(env, stream, first_seq + i, values[i:i + 256], epoch,
                        t0 + i * period_ns, period_ns))


def walk(rng, n):
    x, out = 0.0, []
    for _ in range(n):
        x += rng.gauss(0, 1)
        out.append(x)
    return out


PARAMS = {"window": 512, "subsequence": 16, "hop": 128, "warmup": 64}


def counters(d):
    return d.status()["counters"]


def case_jam(env):
    rng = random.Random(SEED)
    x = walk(rng, 2000)
    with env.daemon(params=PARAMS, limits={"max_seq_jump": 100000}) as d:
        push = env.pusher(d.ingest)
        send(env, push, "s", 0, x[:500])
        d.wait_samples({"s": 500})
        push.send(batch(env, "s", 1 << 62, [1.0]))                      # the seq jam
        push.send(batch(env, "s", 500, [1.0], t0=(1 << 63) - 1000))      # the time jam
        push.send(batch(env, "s", 500 + 100001, [1.0], t0=T0 + 10**12))  # just past
        send(env, push, "s", 500, x[500:1000], t0=T0 + 500 * 10**6)
        d.wait_samples({"s": 1000})
        st = d.status()
        check(st["rejected"].get("seq_jump") == 2,
              "seq_jump counted %s, expected 2" % st["rejected"].get("seq_jump"))
        check(st["rejected"].get("future_time") == 1,
              "future_time counted %s" % st["rejected"].get("future_time"))
        check(st["streams"]["s"]["rejected"] == 3, "the stream counted %d rejected batches"
              % st["streams"]["s"]["rejected"])
        d.stop()
        d.start()  # from the checkpoint: still continues from 1000
        push = env.pusher(d.ingest)
        send(env, push, "s", 1000, x[1000:1500], t0=T0 + 1000 * 10**6)
        d.wait_samples({"s": 1500})
        push.close()
    # the bound off: the jam works, and a reset clears it
    with env.daemon(name="off", params=PARAMS, limits={"max_seq_jump": 0}) as d:
        with harness.Subscriber(env, d.alerts) as sub:
            time.sleep(0.2)  # the subscription reaches the daemon
            push = env.pusher(d.ingest)
            send(env, push, "s", 0, x[:500])
            push.send(batch(env, "s", 1 << 62, [1.0], t0=T0 + 600 * 10**6))
            d.wait_samples({"s": 501})
            push.send(batch(env, "s", 500, x[500:600], t0=T0 + 700 * 10**6))
            wait_until(lambda: d.status()["rejected"].get("out_of_order") == 1, 10,
                       "the real batch refused (out_of_order: inside the jam's gap)")
            p = env.tsmine_run("reset", "--endpoint", d.control, "-s", "s")
            check("starts over" in p.stdout, "reset said %r" % p.stdout)
            p = env.tsmine_run("reset", "--endpoint", d.control, "-s", "nope", check_rc=False)
            check(p.returncode == 65 and "unknown stream" in p.stderr,
                  "reset of an unknown stream: exit %d, %r" % (p.returncode, p.stderr))
            send(env, push, "s", 500, x[500:1000], t0=T0 + 800 * 10**6)
            d.wait_samples({"s": 1001})
            resets = lambda: [a for sid, a in sub.get() if a.kind == env.pb.RESET]  # noqa
            wait_until(lambda: resets(), 10, "a RESET alert")
            r = resets()
            check(len(r) == 1 and r[0].start_seq == 500 and r[0].neighbor_seq == (1 << 62) + 1,
                  "RESET alerts: %s" % [(a.start_seq, a.neighbor_seq) for a in r])
            st = d.status()["streams"]["s"]
            check(st["next_seq"] == 1000, "next_seq %d after the reset" % st["next_seq"])
            push.close()


def case_reboot(env):
    rng = random.Random(SEED + 1)
    x = walk(rng, 1500)
    with env.daemon(params=PARAMS) as d:
        with harness.Subscriber(env, d.alerts) as sub:
            time.sleep(0.2)
            push = env.pusher(d.ingest)
            send(env, push, "s", 0, x[:700], epoch=1)
            d.wait_samples({"s": 700})
            send(env, push, "s", 0, x[700:1000], epoch=2, t0=T0 - 10**9)  # rebooted
            d.wait_samples({"s": 1000})
            push.send(batch(env, "s", 700, x[:10], epoch=1, t0=T0 + 10**12))
            wait_until(lambda: d.status()["rejected"].get("stale_epoch") == 1, 10,
                       "the old epoch's batch refused")
            send(env, push, "s", 300, x[1000:1500], epoch=2, t0=T0)
            d.wait_samples({"s": 1500})
            wait_until(lambda: any(a.kind == env.pb.RESET for _, a in sub.get()), 10,
                       "a RESET alert")
            time.sleep(0.3)  # the alerts of the last batch
            alerts = [a for sid, a in sub.get() if sid == "s"]
            resets = [a for a in alerts if a.kind == env.pb.RESET]
            check(len(resets) == 1 and resets[0].start_seq == 0 and
                  resets[0].neighbor_seq == 700, "RESET alerts: %s"
                  % [(a.start_seq, a.neighbor_seq) for a in resets])
            at = alerts.index(resets[0])
            check(all(a.start_seq < 800 for a in alerts[at + 1:]),
                  "an alert after the RESET numbered in the old run")
            r = d.request(env.pb.ControlRequest.STREAM, "s")
            check(r.ok and r.streams[0].epoch == 2 and r.streams[0].next_seq == 800,
                  "status after the reboot: %s" % r.streams[0])
            p = env.tsmine_run("delete", "--endpoint", d.control, "-s", "s")
            check("deleted" in p.stdout, "delete said %r" % p.stdout)
            check("s" not in d.status()["streams"], "the stream is still there")
            check(counters(d)["streams_deleted"] == 1, "streams_deleted not counted")
            push.send(batch(env, "s", 5, x[:100], epoch=0))  # a new stream, any numbers
            d.wait_samples({"s": 100})
            push.close()


def case_flood(env):
    rng = random.Random(SEED + 2)
    x = walk(rng, 3000)
    limits = {"max_streams": 2000, "when_full": "evict_idle", "evict_min_idle": 1,
              "stream_idle_expiry": 3}
    params = dict(PARAMS, subsequence="auto", warmup=300)
    with env.daemon(params=params, limits=limits) as d:
        push = env.pusher(d.ingest)
        send(env, push, "real", 0, x[:500])
        d.wait_samples({"real": 500})
        base = rss_bytes(d.proc.pid)
        junk = 10000
        for k in range(junk):
            push.send(batch(env, "junk%d" % k, 0, [float(k)]))
            if k % 2000 == 1999:  # the real sender goes on meanwhile
                push.send(batch(env, "real", 500 + k // 2000 * 100,
                                x[500 + k // 2000 * 100:600 + k // 2000 * 100],
                                t0=T0 + (500 + k // 2000 * 100) * 10**6))
        wait_until(lambda: counters(d)["messages"] >= junk + 6, 30, "the flood to be read")
        grown = rss_bytes(d.proc.pid) - base
        c = counters(d)
        st = d.status()
        print("# %d junk messages: RSS +%.1f MB, %d streams, %d evicted, %d refused"
              % (junk, grown / 1e6, len(st["streams"]), c["streams_evicted"],
                 st["rejected"].get("too_many_streams", 0)))
        # under a sanitizer or a wrapper the resident size is theirs (shadow memory)
        check(grown < 60e6 or not RSS_BOUNDS, "RSS grew by %.0f MB over the flood" % (grown / 1e6))
        check(len(st["streams"]) <= 2000, "%d streams in a table of 2000" % len(st["streams"]))
        check(st["streams"]["real"]["samples"] == 1000, "the real stream lost samples: %s"
              % st["streams"]["real"])
        # the table is full of junk: a new real stream still gets in (idle junk goes)
        time.sleep(1.1)
        send(env, push, "newcomer", 0, x[:400])
        d.wait_samples({"newcomer": 400})
        check(counters(d)["streams_evicted"] > 0, "nothing evicted for the newcomer")
        # the idle junk (and the newcomer, fed no more) expires; the real stream, fed, stays
        seq = [1000]

        def only_real_left():
            k = seq[0]
            push.send(batch(env, "real", k, [x[k]], t0=T0 + k * 10**6))
            seq[0] += 1
            n = d.status()["streams"]
            return len(n) == 1 and n
        left = wait_until(only_real_left, 15, "the idle streams to expire", step=0.3)
        check("real" in left, "the fed real stream expired: %s" % sorted(left))
        check(counters(d)["streams_expired"] > 0, "streams_expired not counted")
        push.close()


CASES = {f.__name__[5:]: f for f in (case_jam, case_reboot, case_flood)}


def main():
    return harness.run_cases(__doc__, CASES, SEED)


if __name__ == "__main__":
    sys.exit(main())
