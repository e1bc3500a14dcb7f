#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""subscriber.py - prints tsmined's alerts as they arrive, one line each, and says
when a stream's alert numbers (seq) show that alerts were missed. docs/protocol.md
explains each step.

    examples/subscriber.py [--alerts E] [--count N] [--proto FILE]
                           [--curve-key NAME.key_secret --server-key S.key] [PREFIX]
"""

import argparse
import math
import sys
import time

import zmq

import tsmine_client


def wait_connected(mon, timeout_ms):
    """The PUB slow joiner: the daemon sends us only what it publishes after our
    subscription reached it. The subscription leaves right after the ZeroMQ handshake,
    so wait for the handshake (a socket monitor event), then a moment for it to cross."""
    if not mon.poll(timeout_ms):
        return False
    mon.recv_multipart()
    time.sleep(0.1)
    return True


def line(pb, a):
    """One alert as text (subscriber.c prints the same)."""
    score = "-" if math.isnan(a.score) else "%.6f" % a.score
    text = "%s %s seq=%d start=%d length=%d distance=%.6g neighbor=%d score=%s" % (
        pb.AlertKind.Name(a.kind), a.stream_id, a.seq, a.start_seq, a.length, a.distance,
        a.neighbor_seq, score)
    if a.kind in (pb.ANOMALY, pb.ANOMALY_END):
        text += " event=[%d,%d)" % (a.event_start_seq, a.event_end_seq)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix", nargs="?", default="", help="stream id prefix (default: all)")
    ap.add_argument("--alerts", default="tcp://127.0.0.1:5556")
    ap.add_argument("--count", type=int, default=0, help="exit after N alerts (0: never)")
    ap.add_argument("--proto", help="tsmine.proto (default: ../proto/, else /usr/share/tsmine/)")
    ap.add_argument("--curve-key", help="CURVE: this client's NAME.key_secret")
    ap.add_argument("--server-key", help="CURVE: the daemon's public key file")
    args = ap.parse_args()
    pb = tsmine_client.load_pb2(args.proto)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.linger = 0
    if args.curve_key:
        tsmine_client.curve_client(sub, args.curve_key, args.server_key)
    sub.setsockopt_string(zmq.SUBSCRIBE, args.prefix)  # a byte prefix of stream ids
    mon = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    sub.connect(args.alerts)
    if not wait_connected(mon, 10000):
        print("subscriber: no handshake with %s within 10 s: no daemon there, or (CURVE) "
              "it refused this key" % args.alerts, file=sys.stderr)
        return 69
    sub.disable_monitor()
    mon.close()
    print("subscribed to %r on %s" % (args.prefix, args.alerts), file=sys.stderr, flush=True)

    last = {}  # stream id -> the seq of its last alert received
    received = 0
    while args.count == 0 or received < args.count:
        frames = sub.recv_multipart()  # topic (the stream id), then the Alert
        if len(frames) != 2:
            continue
        a = pb.Alert.FromString(frames[1])
        prev = last.get(a.stream_id, 0)
        if a.seq != prev + 1:  # seq numbers each stream's alerts 1, 2, 3, ...
            print("# %s: seq %d after %d: %s" % (
                a.stream_id, a.seq, prev, "%d alerts missed" % (a.seq - prev - 1)
                if a.seq > prev else "numbering restarted (an older checkpoint restored, "
                "or the stream deleted and created again)"), file=sys.stderr, flush=True)
        last[a.stream_id] = a.seq
        print(line(pb, a), flush=True)
        received += 1
    sub.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
