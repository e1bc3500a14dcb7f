#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""publisher.py - a minimal tsmined sensor: sends one stream, a noisy sine with an
anomaly planted in it, to the daemon's ingest socket (PUSH), then asks its control
socket (REQ) whether every sample was accepted. docs/protocol.md explains each step.

    examples/publisher.py [--ingest E] [--control E] [--stream ID] [--proto FILE]
                          [--curve-key NAME.key_secret --server-key S.key]
"""

import argparse
import math
import sys
import time

import zmq

import tsmine_client

N, PERIOD, BATCH = 4000, 50, 256   # samples, period of the sine, samples per message
ANOMALY = (2500, 2550)             # the planted anomaly: samples [2500, 2550)
PERIOD_NS = 10 * 1000 * 1000       # 100 samples a second


def series():
    """The samples: a sine plus noise from a 31-bit LCG whose noise grows twelvefold
    inside ANOMALY. publisher.c makes the same values, to the bit: both use the C
    library's sin() and every other step is exact."""
    x, state = [], 1
    for k in range(N):
        state = (1103515245 * state + 12345) % 2**31
        noise = (state >> 15) / 65536.0 - 0.5
        amp = 3.0 if ANOMALY[0] <= k < ANOMALY[1] else 0.25
        x.append(math.sin(2 * math.pi * k / PERIOD) + amp * noise)
    return x


def stream_state(ctx, pb, args):
    """The daemon's StreamState of our stream (a STREAM request), or None when it does
    not answer within 1 s or knows no such stream. A fresh REQ socket each time: one
    whose request went unanswered cannot send again."""
    req = ctx.socket(zmq.REQ)
    req.linger = 0
    if args.curve_key:
        tsmine_client.curve_client(req, args.curve_key, args.server_key)
    req.connect(args.control)
    req.send(pb.ControlRequest(schema_version=1, command=pb.ControlRequest.STREAM,
                               stream_id=args.stream).SerializeToString())
    reply = pb.ControlReply.FromString(req.recv()) if req.poll(1000) else None
    req.close()
    return reply.streams[0] if reply and reply.ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ingest", default="tcp://127.0.0.1:5555")
    ap.add_argument("--control", default="tcp://127.0.0.1:5557")
    ap.add_argument("--stream", default="example/sine")
    ap.add_argument("--proto", help="tsmine.proto (default: ../proto/, else /usr/share/tsmine/)")
    ap.add_argument("--curve-key", help="CURVE: this client's NAME.key_secret")
    ap.add_argument("--server-key", help="CURVE: the daemon's public key file")
    args = ap.parse_args()
    pb = tsmine_client.load_pb2(args.proto)
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.sndtimeo = 10000  # send blocks while the daemon's queue is full: 10 s at most
    push.linger = 10000    # close waits up to 10 s for queued messages to leave
    if args.curve_key:
        tsmine_client.curve_client(push, args.curve_key, args.server_key)
    push.connect(args.ingest)  # the daemon binds; ZeroMQ reconnects by itself

    values = series()
    epoch = time.time_ns()  # this run: a later run starts the stream over (a RESET alert)
    t0 = time.time_ns() - N * PERIOD_NS  # so that the last sample's timestamp is now
    try:
        for first in range(0, N, BATCH):
            push.send(pb.SampleBatch(
                schema_version=1, stream_id=args.stream, epoch=epoch, first_seq=first,
                first_timestamp_ns=t0 + first * PERIOD_NS, period_ns=PERIOD_NS,
                values=values[first:first + BATCH]).SerializeToString())
    except zmq.Again:
        print("publisher: no daemon took a message on %s within 10 s" % args.ingest,
              file=sys.stderr)
        return 69
    print("sent %d samples of %s in %d messages; anomaly planted at [%d, %d)"
          % (N, args.stream, -(-N // BATCH), ANOMALY[0], ANOMALY[1]), flush=True)

    # PUSH has no acknowledgement: the control socket says what the daemon accepted.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = stream_state(ctx, pb, args)
        if st and st.epoch == epoch and st.next_seq == N:
            print("daemon: %s accepted up to sequence number %d" % (args.stream, N - 1),
                  flush=True)
            break
        time.sleep(0.1)
    else:
        print("publisher: the daemon did not confirm every sample within 30 s "
              "(`tsmine status` lists rejected batches by reason)", file=sys.stderr)
        return 1
    push.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
