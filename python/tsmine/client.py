# SPDX-License-Identifier: Apache-2.0
"""A client for tsmined: publish samples, receive alerts, ask for the daemon's status.

Over ZeroMQ (pyzmq) with the project's wire format (proto/tsmine.proto, package
tsmine.v1; docs/protocol.md explains it), whose Python code protoc generated when the
package was built (``tsmine_pb2``; nothing generated is committed). Needs the ``client``
extra: ``pip install "./python[client]"`` (pyzmq, protobuf), or Debian's python3-zmq and
python3-protobuf, and protoc (protobuf-compiler) when the package is built.

- :class:`Publisher` pushes SampleBatch messages to the ingest socket (PUSH);
- :func:`alerts` subscribes to the alerts of the streams whose id starts with a prefix
  (SUB) and yields each as a dict of the Alert's fields;
- :func:`status` asks the control socket (REQ) for the counters of the daemon and of
  every stream, as ``tsmine status --format json`` prints them.

Alerts and replies are turned into dicts field by field from the message descriptors,
so fields that a newer tsmine.proto adds appear without a change here, and a package
built from an older .proto still reads a newer daemon's messages (protobuf skips fields
it does not know). Enum values come as their names (``"ANOMALY"``, ``"FAR"``).

CURVE: pass ``curve_key`` (this client's ``NAME.key_secret`` from ``tsmine keygen``)
and ``server_key`` (the daemon's public key file) to every call.
"""

import math
import re
import time

import numpy as np

try:
    import zmq
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"tsmine.client needs pyzmq ({e}): pip install 'tsmine[client]' or apt install python3-zmq"
    ) from None
try:
    from . import tsmine_pb2 as pb
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "tsmine.client needs the message classes generated from tsmine.proto at build time "
        f"({e}): install protoc (Debian: protobuf-compiler) and protobuf (python3-protobuf), "
        "then build the package again"
    ) from None

SCHEMA_VERSION = 1
INGEST = "tcp://127.0.0.1:5555"  #: tsmined's default ingest endpoint (PULL)
ALERTS = "tcp://127.0.0.1:5556"  #: its default alerts endpoint (PUB)
CONTROL = "tcp://127.0.0.1:5557"  #: its default control endpoint (ROUTER, for REQ)


def _read_key(path):
    with open(path) as f:
        return dict(re.findall(r'(public-key|secret-key) = "(.{40})"', f.read()))


def _socket(ctx, kind, curve_key, server_key):
    """A socket of ctx made a CURVE client when keys are given (before it connects)."""
    s = ctx.socket(kind)
    s.linger = 0
    if bool(curve_key) != bool(server_key):
        s.close()
        raise ValueError("CURVE needs both curve_key and server_key")
    if curve_key:
        mine, server = _read_key(curve_key), _read_key(server_key)
        s.curve_serverkey = server["public-key"].encode()
        s.curve_publickey = mine["public-key"].encode()
        s.curve_secretkey = mine["secret-key"].encode()
    return s


def to_dict(msg):
    """A protobuf message as a dict of every field of its descriptor: enums by name,
    repeated fields as lists, nested messages as dicts."""
    out = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if _repeated(f):
            v = [_value(f, x) for x in v]
        else:
            v = _value(f, v)
        out[f.name] = v
    return out


def alert_dict(msg):
    """An Alert as :func:`to_dict` gives it, with the view fields as ``tsmine alerts``
    writes them (lib/alert_json.c): ``view`` by its lowercase name (``None`` for an
    alert without views, VIEW_UNSPECIFIED), ``magnitude_neighbor_seq`` ``None`` where the
    magnitude distance is not a number (a DISCORD)."""
    d = to_dict(msg)
    if "view" in d:
        d["view"] = None if msg.view == 0 else d["view"].lower()
    if "magnitude_neighbor_seq" in d and not math.isfinite(msg.magnitude_distance):
        d["magnitude_neighbor_seq"] = None
    return d


def _repeated(f):
    # FieldDescriptor.is_repeated from protobuf 5.29 on (7 dropped .label); .label before
    rep = getattr(f, "is_repeated", None)
    return rep if rep is not None else f.label == f.LABEL_REPEATED


def _value(f, v):
    if f.type == f.TYPE_ENUM:
        d = f.enum_type.values_by_number.get(v)
        return d.name if d else v
    if f.type == f.TYPE_MESSAGE:
        return to_dict(v)
    return v


class Publisher:
    """Sends samples to tsmined's ingest socket, as SampleBatch messages.

    Parameters
    ----------
    endpoint : str, default "tcp://127.0.0.1:5555"
        The daemon's ingest endpoint (it binds; this connects, and ZeroMQ reconnects).
    epoch : int, optional
        This sender's run (SampleBatch.epoch); default the time now in nanoseconds, so
        that a later run of the same sender starts its streams over (a RESET alert)
        instead of being refused as duplicates. 0 for a sender that never restarts its
        numbering.
    batch : int, default 256
        Samples per message.
    timeout : float, default 10.0
        Seconds a send may wait while the daemon's queue is full (then TimeoutError),
        and that close waits for queued messages to leave.
    curve_key, server_key : str, optional
        CURVE key files (see the module's notes).

    Examples
    --------
    >>> with tsmine.Publisher() as pub:                      # doctest: +SKIP
    ...     pub.send("site/pump-1", values, period_ns=10**9)
    """

    def __init__(self, endpoint=INGEST, *, epoch=None, batch=256, timeout=10.0,
                 curve_key=None, server_key=None):
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.epoch = time.time_ns() if epoch is None else int(epoch)
        self.batch = int(batch)
        self._next = {}
        self._ctx = zmq.Context.instance()
        self._sock = _socket(self._ctx, zmq.PUSH, curve_key, server_key)
        self._sock.sndtimeo = int(timeout * 1000)
        self._sock.linger = int(timeout * 1000)
        self._sock.connect(endpoint)

    def send(self, stream_id, values, *, first_seq=None, timestamps_ns=None,
             first_timestamp_ns=None, period_ns=None):
        """Sends values as the next samples of stream_id, in batches.

        Parameters
        ----------
        stream_id : str
            The stream.
        values : array_like of float
            The samples (``nan`` for a missing one).
        first_seq : int, optional
            Sequence number of the first sample; default: where this publisher's last
            send of the stream ended (0 for its first).
        timestamps_ns : array_like of int, optional
            Each sample's time (ns since the epoch); as many as values.
        first_timestamp_ns, period_ns : int, optional
            Instead of timestamps_ns: sample k's time is first + k period. Default:
            period 1 s, the last sample stamped now.

        Returns
        -------
        int
            The sequence number after the last sample sent.

        Raises
        ------
        TimeoutError
            When the daemon took no message within the timeout.
        """
        values = np.asarray(values, dtype=np.float64).ravel().tolist()
        n = len(values)
        seq = self._next.get(stream_id, 0) if first_seq is None else int(first_seq)
        if timestamps_ns is not None:
            timestamps_ns = np.asarray(timestamps_ns, dtype=np.int64).ravel().tolist()
            if len(timestamps_ns) != n:
                raise ValueError(f"{len(timestamps_ns)} timestamps for {n} values")
        else:
            period_ns = 10**9 if period_ns is None else int(period_ns)
            if first_timestamp_ns is None:
                first_timestamp_ns = time.time_ns() - (n - 1) * period_ns
        for k in range(0, n, self.batch):
            msg = pb.SampleBatch(schema_version=SCHEMA_VERSION, stream_id=stream_id,
                                 first_seq=seq + k, epoch=self.epoch,
                                 values=values[k : k + self.batch])
            if timestamps_ns is not None:
                msg.timestamps_ns.extend(timestamps_ns[k : k + self.batch])
            else:
                msg.first_timestamp_ns = int(first_timestamp_ns) + k * period_ns
                msg.period_ns = period_ns
            try:
                self._sock.send(msg.SerializeToString())
            except zmq.Again:
                raise TimeoutError(f"tsmined took no message on its ingest socket within "
                                   f"{self._sock.sndtimeo / 1000:g} s") from None
        self._next[stream_id] = seq + n
        return seq + n

    def close(self):
        """Closes the socket, waiting up to the timeout for queued messages to leave."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Alerts:
    """The alerts tsmined publishes for the streams whose id starts with prefix.

    Made by :func:`alerts`, connected and subscribed when it returns; iterate over it
    (each alert a dict), or call :meth:`get`. Close it (or use it in a ``with`` block)
    when done.
    """

    def __init__(self, endpoint, prefix, timeout, connect_timeout, curve_key, server_key):
        self.timeout = timeout
        self._sock = _socket(zmq.Context.instance(), zmq.SUB, curve_key, server_key)
        self._sock.setsockopt_string(zmq.SUBSCRIBE, prefix)
        mon = self._sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        try:
            self._sock.connect(endpoint)
            # the PUB slow joiner: tsmined sends only what it publishes after the
            # subscription reached it, which leaves right after the handshake
            if not mon.poll(int(connect_timeout * 1000)):
                self._sock.close()
                raise TimeoutError(f"no handshake with {endpoint} within {connect_timeout:g} s: "
                                   "no daemon there, or (CURVE) it refused this key")
            mon.recv_multipart()
            time.sleep(0.1)
        finally:
            if not self._sock.closed:
                self._sock.disable_monitor()
            mon.close()

    def get(self, timeout=None):
        """The next alert as a dict, or None when none came within timeout seconds
        (None: wait for ever)."""
        while True:
            if timeout is not None and not self._sock.poll(int(timeout * 1000)):
                return None
            frames = self._sock.recv_multipart()  # the topic (stream id), then the Alert
            if len(frames) == 2:
                return alert_dict(pb.Alert.FromString(frames[1]))

    def __iter__(self):
        return self

    def __next__(self):
        a = self.get(self.timeout)
        if a is None:
            raise StopIteration
        return a

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def alerts(endpoint=ALERTS, prefix="", *, timeout=None, connect_timeout=10.0, curve_key=None,
           server_key=None):
    """Subscribes to tsmined's alerts; iterate over the result for each alert as a dict.

    Parameters
    ----------
    endpoint : str, default "tcp://127.0.0.1:5556"
        The daemon's alerts endpoint.
    prefix : str, default ""
        Only the streams whose id starts with it ("" for all).
    timeout : float, optional
        Iteration ends when no alert came for this many seconds (default: never).
    connect_timeout : float, default 10.0
        Seconds to wait for the connection (then TimeoutError).
    curve_key, server_key : str, optional
        CURVE key files.

    Returns
    -------
    Alerts
        Connected and subscribed: alerts published from now on arrive. Each is a dict
        of the Alert's fields, as ``tsmine alerts`` prints them (``kind`` by name).

    Examples
    --------
    >>> with tsmine.alerts(prefix="site/") as subscription:   # doctest: +SKIP
    ...     for a in subscription:
    ...         print(a["kind"], a["stream_id"], a["start_seq"], a["score"])
    """
    return Alerts(endpoint, prefix, timeout, connect_timeout, curve_key, server_key)


def request(command, endpoint=CONTROL, *, stream_id="", timeout=5.0, curve_key=None,
            server_key=None):
    """One control request (a ControlRequest.Command name, e.g. "STATUS") and its reply
    as a dict of the ControlReply's fields.

    Raises
    ------
    TimeoutError
        When no reply came within timeout seconds.
    """
    sock = _socket(zmq.Context.instance(), zmq.REQ, curve_key, server_key)
    try:
        sock.connect(endpoint)
        cmd = pb.ControlRequest.Command.Value(command)
        sock.send(pb.ControlRequest(schema_version=SCHEMA_VERSION, command=cmd,
                                    stream_id=stream_id).SerializeToString())
        if not sock.poll(int(timeout * 1000)):
            raise TimeoutError(f"no control reply from {endpoint} within {timeout:g} s")
        return to_dict(pb.ControlReply.FromString(sock.recv()))
    finally:
        sock.close()


def status(endpoint=CONTROL, *, timeout=5.0, curve_key=None, server_key=None):
    """The daemon's state, shaped as ``tsmine status --format json`` prints it.

    Parameters
    ----------
    endpoint : str, default "tcp://127.0.0.1:5557"
        The daemon's control endpoint.
    timeout : float, default 5.0
        Seconds to wait for the reply.
    curve_key, server_key : str, optional
        CURVE key files.

    Returns
    -------
    dict
        ``streams``: {stream id: its StreamState fields}; ``rejected``,
        ``alerts_by_kind``, ``counters``: {name: count}; ``backend``, ``version``.

    Raises
    ------
    TimeoutError
        When the daemon did not answer.
    RuntimeError
        When it refused the request (its error message).
    """
    r = request("STATUS", endpoint, timeout=timeout, curve_key=curve_key, server_key=server_key)
    if not r["ok"]:
        raise RuntimeError(f"tsmined refused STATUS: {r['error']}")
    counters = ("rejected", "alerts_by_kind", "counters")
    out = {"streams": {s.pop("stream_id"): s for s in r["streams"]}}
    out.update({k: {c["name"]: c["value"] for c in r[k]} for k in counters})
    skip = ("streams", "ok", "error", "schema_version")
    out.update({k: v for k, v in r.items() if k not in out and k not in skip})
    return out
