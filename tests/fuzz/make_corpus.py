#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_corpus.py - writes the seed corpus of ingest_fuzz (corpus/ingest/): valid
SampleBatch messages of several shapes, each rejection reason once, and wire-level
edge cases (non-canonical encodings, unknown fields, truncations).

    tests/fuzz/make_corpus.py [DIR]     (default: corpus/ingest beside this script)

The bytes are written by the small encoder below rather than by a protobuf library, so
that non-canonical encodings can be written too; the canonical seeds double as a check
of it (ingest_fuzz requires protobuf-c to re-encode them byte for byte). The files are
committed; rerun this after changing it and commit the result.
"""

import math
import os
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1  # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire_type):
    return varint(field << 3 | wire_type)


def f_varint(field, v):
    return key(field, 0) + varint(v) if v else b""


def f_bytes(field, data):
    return key(field, 2) + varint(len(data)) + data if data else b""


def batch(stream_id="s1", first_seq=0, values=(), timestamps=(), first_ts=0, period=0,
          schema=1):
    """A SampleBatch in canonical form (what protobuf-c's pack writes)."""
    return (f_varint(1, schema) + f_bytes(2, stream_id.encode()) + f_varint(3, first_seq) +
            f_bytes(4, b"".join(varint(t) for t in timestamps)) + f_varint(5, first_ts) +
            f_varint(6, period) + f_bytes(7, struct.pack("<%dd" % len(values), *values)))


def ramp(n, scale=1.0):
    return [scale * math.sin(k / 3.0) for k in range(n)]


T0 = 1700000000000000000
SEEDS = {
    # Accepted shapes.
    "valid-one-value": batch("a", values=[1.0]),
    "valid-period": batch("s1", 10, ramp(4), first_ts=1000, period=10),
    "valid-timestamps": batch("sensor/room-1/temp", 0, ramp(16),
                              timestamps=[T0 + 7 * k * k for k in range(16)]),
    "valid-full-window": batch("w", 123456, ramp(64, 1e3), first_ts=T0, period=1000000),
    "valid-schema-omitted": batch("s", 5, [0.25, -0.5], schema=0),
    "valid-negative-times": batch("neg", 1, ramp(3), first_ts=-5000, period=7),
    "valid-seq-near-max": batch("top", 2**64 - 5, ramp(4)),
    "valid-id-255": batch("x" * 255, 0, [1.0]),
    "valid-special-doubles": batch("d", 0, [-0.0, 5e-324, 1.7976931348623157e308,
                                            -1.7976931348623157e308, 2.2250738585072014e-308]),
    "valid-equal-timestamps": batch("eq", 0, ramp(3), timestamps=[5, 5, 5]),
    # Refused, one per reason.
    "bad-id-empty": batch("", 0, [1.0]),
    "bad-id-256": batch("x" * 256, 0, [1.0]),
    "bad-id-control": batch("a\tb", 0, [1.0]),
    "bad-id-nul": batch("s1\0xyz", 0, [1.0]),
    "bad-id-utf8": batch("caf\u00e9", 0, [1.0]),
    "empty-values": batch("s1", 0, []),
    "too-large": batch("big", 0, ramp(65)),
    "nonfinite-nan": batch("s1", 0, [1.0, float("nan")]),
    "nonfinite-inf": batch("s1", 0, [float("inf")]),
    "nonfinite-minus-inf": batch("s1", 0, [0.0, float("-inf")]),
    "timestamps-count": batch("s1", 0, ramp(3), timestamps=[1, 2]),
    "timestamps-period-negative": batch("s1", 0, ramp(3), period=-1),
    "timestamps-overflow": batch("s1", 0, ramp(3), first_ts=2**63 - 5, period=10),
    "time-backwards": batch("s1", 0, ramp(3), timestamps=[3, 2, 1]),
    "schema-version-2": batch("s1", 0, [1.0], schema=2),
    "bad-seq-wraps": batch("s1", 2**64 - 2, ramp(4)),
    # Wire-level edge cases.
    "empty-message": b"",
    "truncated-varint": b"\x18\xff",
    "varint-11-bytes": b"\x18" + b"\xff" * 10 + b"\x01",
    "length-2e32-1": b"\x12\xff\xff\xff\xff\x0f",
    "length-past-end": b"\x12\x05ab",
    "id-as-varint": b"\x10\x01",
    "values-as-fixed32": b"\x3d\x00\x00\x00\x00",
    "values-partial-double": b"\x3a\x04\x00\x00\x00\x00",
    "field-zero": b"\x00\x01",
    "wire-type-7": b"\x0f",
    "start-group": b"\x0b\x0c",
    # Accepted but not canonical: decode(encode(x)) == x, the bytes differ.
    "noncanon-unpacked-values": f_bytes(2, b"u") + b"".join(
        key(7, 1) + struct.pack("<d", v) for v in ramp(5)),
    "noncanon-unpacked-timestamps": f_bytes(2, b"u") + b"".join(
        key(4, 0) + varint(t) for t in (10, 20, 30)) + f_bytes(7, struct.pack("<3d", 1, 2, 3)),
    "noncanon-reversed-fields": f_bytes(7, struct.pack("<2d", 1, 2)) + f_varint(3, 9) +
    f_bytes(2, b"r") + f_varint(1, 1),
    "noncanon-duplicate-id": f_bytes(2, b"first") + f_bytes(2, b"second") +
    f_bytes(7, struct.pack("<d", 1)),
    "noncanon-split-values": f_bytes(2, b"v") + f_bytes(7, struct.pack("<2d", 1, 2)) +
    f_bytes(7, struct.pack("<d", 3)),
    "noncanon-long-varint": f_bytes(2, b"l") + key(3, 0) + b"\x85\x80\x80\x00" +
    f_bytes(7, struct.pack("<d", 1)),
    "noncanon-zero-fields": key(1, 0) + b"\x00" + f_bytes(2, b"z") + key(3, 0) + b"\x00" +
    f_bytes(7, struct.pack("<d", 1)),
    "noncanon-schema-64bit": key(1, 0) + varint(2**32 + 1) + f_bytes(2, b"h") +
    f_bytes(7, struct.pack("<d", 1)),
    "unknown-fields": batch("k", 0, [1.0]) + f_varint(9, 42) + f_bytes(10, b"xyz") +
    key(11, 5) + b"\x01\x02\x03\x04" + key(12, 1) + b"\x00" * 8,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "ingest")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(SEEDS), out))


if __name__ == "__main__":
    main()
