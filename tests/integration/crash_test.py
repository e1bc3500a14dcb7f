#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""crash_test.py - tsmined's crash-safe state (hardening issue, item 2), through the
real daemon.

Cases (one per ctest entry, --case NAME):
  kill     20 cycles: publish to a few streams at a fixed rate, SIGKILL the daemon at a
           random moment, restart it. Before each restart the checkpoint on disk is
           read by an independent parser (framing, CRC-32, every stream's next
           sequence number): it is always complete. Each restart must restore exactly
           that file (or find none before the first checkpoint), and log which; a
           rejection fails the test, since SIGKILL cannot tear a renamed file. The
           publisher resumes each stream at the restored next sequence number, so the
           samples lost per kill are `sent - restored`, per stream; they must stay
           within the checkpoint interval's worth (rate x interval) plus the slack the
           loop may take to get to a due checkpoint (SLACK_S). A clean SIGTERM at the
           end loses nothing.
  corrupt  real starts on corrupt checkpoints (empty, short header, wrong magic, wrong
           version, truncated, bad checksum, wrong length field, bad fields behind a
           valid checksum, random byte flips): each is refused with its reason in the
           log, moved aside to streams.ckpt.rejected, the daemon starts empty and
           takes samples; the intact file still restores afterwards, and so does the
           same file in format 4 (without the magnitude history: as_version_4), whose
           streams are written again in format 5.
  unreadable  (issue 17 item 6) what may hide a good checkpoint is never moved aside
           nor overwritten: a checkpoint tsmined may not read (permission denied; as
           root the daemon runs as nobody for this), a FIFO, a symbolic link to
           /dev/zero and a directory at its name each stop the start at once with exit
           74 and the reason in the log, and stay as they were; a 2 GiB sparse file is
           read only as far as its first bytes (refused as no checkpoint, moved aside,
           peak RSS checked); the intact file then restores.
  config_change  (issue 17 item 6) a restart with a lower max_streams and other stream
           parameters: the first streams created are restored (the others counted as
           checkpoint_streams_dropped and logged), and they run on the configuration's
           parameters at once, not the checkpoint's.

The in-process loop over the restore function with random byte flips (10 s) is
tests/daemon_checkpoint_test.c; this file drives the real binary.
"""

import contextlib
import os
import random
import shutil
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Failure, check  # noqa: E402

SEED = int(os.environ.get("TSM_TEST_SEED", "20240607"))
CYCLES = 20
RATE = 1000        # samples per second per stream
BATCH = 20         # samples per message
INTERVAL_S = 1     # limits.checkpoint_interval in the test's configuration
# A checkpoint is due INTERVAL_S after the previous one ended; the loop notices it at
# its next wake-up (tick_ms = 10) and then spends the write itself (milliseconds
# here), and samples still in flight to the daemon count as lost: what a kill may lose
# beyond the interval's worth. SLACK_S bounds that with room for a loaded 2-core CI
# machine under ASan; the figures printed say what was actually lost.
SLACK_S = 0.5
# Timing is all that a slower daemon changes: under a wrapper (valgrind, harness.SLOW)
# or in the TSan pass (TSM_TEST_QUICK) the slack grows by that factor.
SLOW = harness.SLOW * (4 if os.environ.get("TSM_TEST_QUICK", "0") not in ("", "0") else 1)
STREAMS = ["crash/%d" % i for i in range(4)]
PARAMS = {"window": 512, "subsequence": 32, "hop": 128, "range": float("nan")}
CKPT = "streams.ckpt"


# ---- an independent reader of the checkpoint format (stream/checkpoint.c) ----------

VERSION = 6        # stream/ckpt_record.h: 6 the last score the events' (same layout as 5),
                   # 5 since the magnitude history, 4 the groups
VERSIONS = (4, 5, 6)  # the versions tsmined reads (it writes VERSION only)
VERSIONS_READ = "versions 4 to 6"  # as its refusal of another says
ALL = 0xffffffff   # TSS_CKPT_ALL: the group of a file of every stream
ALERT_KINDS = 8    # TSS_ALERT_KINDS: counters per alert kind (index 0 unused)
CALIB_HISTORY = 1000  # TSS_CALIB_HISTORY: the score history's ring of 16-bit bins
ROBUST_HISTORY = 1000  # TSS_ROBUST_HISTORY: the magnitude history's values at most
ROBUST_MIN = 250       # TSS_ROBUST_MIN: values before its first refresh
ROBUST_REFRESH = 256   # TSS_ROBUST_REFRESH: values between refreshes
MAG_HEAD = "IIBdd"     # version 5: the magnitude history's n, since, ready, median, MAD
PEAK_VIEWS = "BddddQd"  # version 5: the peak's view, 3 scores, magnitude, neighbour, level


def group_of(sid):
    """tss_ckpt_group: FNV-1a of the id, folded, modulo 256."""
    h = 2166136261
    for c in sid.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return (h ^ (h >> 16)) % 256


def parse_checkpoint(data, records=None, parts=None):
    """Checks the framing (magic, version 4 to 6, group, length, CRC-32, record count)
    and walks every stream record (each in the file's group); returns {stream id:
    next_seq}; appends (creation index, record bytes) to records if given, and to parts
    the record's bytes without what version 5 added (the magnitude history, the peak's
    views: a version 4 record); raises ValueError when the file is not complete or a
    record does not add up."""
    if len(data) < 16 + 4 + 12 or data[:8] != b"TSSCKPT\0":
        raise ValueError("bad magic or short file (%d bytes)" % len(data))
    version, group = struct.unpack_from("<II", data, 8)
    payload, crc = struct.unpack_from("<QI", data, len(data) - 12)
    if version not in VERSIONS or payload != len(data) - 28 or zlib.crc32(data[:-12]) != crc:
        raise ValueError("version %d, length %d of %d, or CRC mismatch"
                         % (version, payload, len(data) - 28))
    at, end = 16, len(data) - 16  # the record count: the payload's last 4 bytes
    out = {}

    def take(fmt):
        nonlocal at
        v = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return v

    while at < end:
        start = at
        index, idlen = take("QI")
        sid = data[at:at + idlen].decode()
        at += idlen
        if group != ALL and group_of(sid) != group:
            raise ValueError("%s in the file of group %d" % (sid, group))
        window = take("IIIIIdddBIB")[0]           # parameters
        take("III")                               # m in force, its period, next look
        # started, next_seq, last_ts, epoch, reset pending, gaps
        _, next_seq, _, _, _, ngaps, _ = take("BQqQBII")
        at += 16 * ngaps
        samples, = take("Q")
        at += 8 * (1 + ALERT_KINDS + 1)           # rejected, alerts by kind, gaps
        take("QQ")                                # proc_seq, since_pass
        fill, = take("I")
        if fill > window or samples > next_seq:
            raise ValueError("%s: fill %d of %d, samples %d, next_seq %d"
                             % (sid, fill, window, samples, next_seq))
        at += 16 * fill                           # window samples and timestamps
        take("II")                                # score history: count, head
        at += 2 * CALIB_HISTORY                   # its bins
        cut = []                                  # what version 4 records do not have
        if version >= 5:
            mag = at
            n, since, ready, _, mad = take(MAG_HEAD)  # the magnitude history
            if (n > ROBUST_HISTORY or ready != (n >= ROBUST_MIN) or since >= ROBUST_REFRESH
                    or mad < 0):
                raise ValueError("%s: magnitude history of %d values, ready %d, since %d"
                                 % (sid, n, ready, since))
            at += 8 * n                           # its values, oldest first
            cut.append((mag, at))
        take("dQBBQQI")                           # last raw score, events, the open event
        take("QqdQdB")                            # its peak
        if version >= 5:
            views = at
            take(PEAK_VIEWS)                      # the peak's views
            cut.append((views, at))
        npub, = take("Q")
        at += 16 * npub                           # published spans
        nmotif, = take("Q")
        at += 16 * nmotif                         # published MOTIF pairs
        nst, = take("Q")
        at += 16 * nst                            # staged samples and timestamps
        nmk, = take("Q")
        at += 41 * nmk                            # gap marks
        out[sid] = next_seq
        if records is not None:
            records.append((index, data[start:at]))
        if parts is not None:
            keep, prev = [], start
            for a, b in cut:
                keep.append(data[prev:a])
                prev = b
            parts.append((index, b"".join(keep) + data[prev:at]))
    count, = struct.unpack_from("<I", data, end)
    if at != end or count != len(out):
        raise ValueError("stream records end at %d, payload at %d; %d records, count %d"
                         % (at, end, len(out), count))
    return out


def group_files(state_dir):
    return sorted(n for n in os.listdir(state_dir)
                  if n.startswith("streams-") and n.endswith(".ckpt"))


def read_checkpoint(state_dir, records=None):
    """{id: next_seq} of the checkpoint on disk (every group's file), or None when there
    is none."""
    names, out = group_files(state_dir), {}
    for name in names:
        with open(os.path.join(state_dir, name), "rb") as f:
            data = f.read()
        try:
            got = parse_checkpoint(data, records)
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            raise Failure("the checkpoint file %s on disk is not complete: %s" % (name, e))
        check(not set(got) & set(out), "%s: streams in two files" % name)
        out.update(got)
    return out if names else None


def framed(version, group, records):
    """A checkpoint file of that version and group holding records (bytes, in order)."""
    body = b"TSSCKPT\0" + struct.pack("<II", version, group)
    body += b"".join(records) + struct.pack("<I", len(records))
    return body + struct.pack("<QI", len(body) - 16, zlib.crc32(body))


def whole_file(state_dir):
    """The group files' streams as one file of every stream (tss_engine_save's, which
    tsmined reads from streams.ckpt and rewrites as groups); the group files go."""
    records = []
    read_checkpoint(state_dir, records)
    for name in group_files(state_dir):
        os.unlink(os.path.join(state_dir, name))
    return framed(VERSION, ALL, [r for _, r in sorted(records)])


def as_version_4(data):
    """A version 5 or 6 file as version 4 wrote the same streams: every record without the
    magnitude history and the peak's views."""
    parts = []
    parse_checkpoint(data, parts=parts)
    return framed(4, struct.unpack_from("<I", data, 12)[0], [r for _, r in parts])


def temp_files(state_dir):
    return [n for n in os.listdir(state_dir) if n.startswith(".streams")]


def last_start_log(d):
    """The log lines of the daemon's latest start."""
    with open(d.log_path) as f:
        text = f.read()
    return text[text.rfind("---- start"):]


def restore_outcome(d):
    """'restored', 'none' or 'rejected: WHY', from the log of the latest start."""
    lines = [l for l in last_start_log(d).splitlines() if "checkpoint:" in l and
             ("restored" in l or "none in" in l or "rejected:" in l)]
    rejected = [l for l in lines if "rejected:" in l]
    check(len(lines) - len(rejected) == 1, "expected one restore line in the log, got %r"
          % lines)
    l = (rejected or lines)[0]
    if "rejected:" in l:
        return "rejected: " + l.split("rejected:", 1)[1].strip()
    return "restored" if "restored" in l else "none"


# ---- kill ---------------------------------------------------------------------------

def series(rng, n):
    x, out = 0.0, []
    for _ in range(n):
        x += rng.gauss(0.0, 1.0)
        out.append(x)
    return out


def publish(env, d, values, first, duration, kill=True, hunt=False):
    """Publishes every stream from first[id] at RATE for duration seconds, then (kill)
    SIGKILLs the daemon at once; returns {id: next sequence number sent}. hunt: the
    kill comes instead as soon as a checkpoint write is seen under way (its temporary
    file exists; polled every millisecond), or after duration."""
    sock = env.zctx.socket(harness.zmq.PUSH)
    sock.setsockopt(harness.zmq.LINGER, 0 if kill else 5000)
    sock.connect(d.ingest)
    sent = dict(first)
    t0 = time.monotonic()
    k = 0
    while True:
        due = t0 + k * BATCH / RATE
        if due - t0 >= duration:
            break
        while time.monotonic() < due:
            if hunt and temp_files(d.state_dir):
                break
            time.sleep(min(0.001, max(0.0, due - time.monotonic())))
        if hunt and temp_files(d.state_dir):
            break
        for s in STREAMS:
            seq = sent[s]
            sock.send(env.batch(s, seq, values[s][seq:seq + BATCH]), harness.zmq.NOBLOCK)
            sent[s] = seq + BATCH
        k += 1
    if kill:
        d.proc.kill()  # SIGKILL: no chance to checkpoint
        d.proc.wait()
        d.log.close()
    sock.close()
    return sent


@contextlib.contextmanager
def running(d):
    """A case's daemon: its log is printed when a check fails, and it is killed at the
    end."""
    try:
        yield d
    except Failure:
        d.dump_log()
        raise
    finally:
        d.kill()


def end(d):
    """Ends a daemon that is to be replaced: SIGKILL, or under a wrapper (valgrind) a
    clean SIGTERM, so that the wrapper reports on that run, and its report checked."""
    if not harness.WRAPPER:
        d.kill()
        return
    d.stop()
    problem = d.wrapper_problem()
    check(problem is None, "under %s: %s" % (" ".join(harness.WRAPPER), problem))


def case_kill(env):
    rng = random.Random(SEED)
    horizon = int(RATE * (CYCLES * 3.0 + 10))
    values = {s: series(rng, horizon) for s in STREAMS}
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": INTERVAL_S})
    worth = RATE * INTERVAL_S
    bound = RATE * (INTERVAL_S + SLACK_S * SLOW)
    losses, mid_write, outcomes = [], 0, {}
    sent = {s: 0 for s in STREAMS}
    with running(d):
        for cycle in range(CYCLES + 1):
            on_disk = read_checkpoint(d.state_dir)  # complete, or none: never torn
            d.start()
            outcome = restore_outcome(d)
            outcomes[outcome.split(":")[0]] = outcomes.get(outcome.split(":")[0], 0) + 1
            check(not temp_files(d.state_dir), "temporary files left after a start: %s"
                  % temp_files(d.state_dir))
            st = d.status()["streams"]
            if on_disk is None:
                check(outcome == "none", "cycle %d: no checkpoint on disk, log says %s"
                      % (cycle, outcome))
                check(not st, "cycle %d: streams %s without a checkpoint" % (cycle, sorted(st)))
            else:
                check(outcome == "restored", "cycle %d: a complete checkpoint was not "
                      "restored: %s" % (cycle, outcome))
                got = {s: v["next_seq"] for s, v in st.items()}
                check(got == on_disk, "cycle %d: restored %s, the file on disk holds %s"
                      % (cycle, got, on_disk))
            restored = {s: st[s]["next_seq"] if s in st else 0 for s in STREAMS}
            for s, v in st.items():  # the stream resumed at next_seq: nothing else counted
                check(v["samples"] == v["next_seq"] and v["gaps"] == 0 and v["rejected"] == 0,
                      "cycle %d: %s restored inconsistent: %s" % (cycle, s, v))
            if cycle:
                lost = [sent[s] - restored[s] for s in STREAMS]
                check(min(lost) >= 0, "cycle %d: restored more than was sent: %s, sent %s"
                      % (cycle, restored, sent))
                check(max(lost) <= bound, "cycle %d: %d samples lost per stream, more than "
                      "the interval's worth %d (+ slack: %d)" % (cycle, max(lost), worth, bound))
                losses.append(max(lost))
            if cycle == CYCLES:
                break
            # the next kill: anywhere in a few intervals; every 5th right after the start
            # (before the first checkpoint of this run); every 4th while a checkpoint is
            # being written
            hunt = cycle % 4 == 2
            duration = (3.0 * INTERVAL_S if hunt else rng.uniform(0.0, 0.3) if cycle % 5 == 4
                        else rng.uniform(0.3, 2.5))
            sent = publish(env, d, values, restored, duration, hunt=hunt)
            mid_write += bool(temp_files(d.state_dir))
        # a clean stop loses nothing
        sent = publish(env, d, values, restored, 0.5, kill=False)
        d.wait_samples(sent)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        d.start()
        st = d.status()["streams"]
        check({s: st[s]["next_seq"] for s in STREAMS} == sent,
              "after SIGTERM and restart: %s, sent %s" % (st, sent))
        end(d)
    print("# %d kill cycles survived; restarts: %s; kills during a checkpoint write: %d"
          % (CYCLES, outcomes, mid_write))
    print("# samples lost per kill (per stream, at %d samples/s, checkpoint_interval %d s "
          "= %d samples): max %d, mean %.0f (%.2f intervals max)"
          % (RATE, INTERVAL_S, worth, max(losses), sum(losses) / len(losses),
             max(losses) / worth))


# ---- corrupt ------------------------------------------------------------------------

def fix_crc(b):
    """Recomputes the CRC (of everything before the length field) after an edit."""
    b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[:-12])))
    return bytes(b)


def corruptions(good, rng):
    """(name, bytes, the reason the log must give) for each corrupt case."""
    first_id = 16 + 8  # the first stream's id length field
    out = [
        ("empty", b"", "not a tsmine stream checkpoint"),
        ("short header", good[:10], "not a tsmine stream checkpoint"),
        ("wrong magic", b"XSSCKPT\0" + good[8:], "not a tsmine stream checkpoint"),
        ("newer version", fix_crc(bytearray(good[:8]) + struct.pack("<I", VERSION + 1) + good[12:]),
         "version %d, this build reads %s" % (VERSION + 1, VERSIONS_READ)),
        ("older version", fix_crc(bytearray(good[:8]) + struct.pack("<I", 1) + good[12:]),
         "version 1, this build reads %s" % VERSIONS_READ),
        ("truncated", good[:len(good) // 2], "length or checksum mismatch"),
        ("truncated tail", good[:-1], "length or checksum mismatch"),
        ("bad checksum", good[:-1] + bytes([good[-1] ^ 0xff]), "length or checksum mismatch"),
        ("wrong length field", good[:-12] + struct.pack("<Q", len(good)) + good[-4:],
         "length or checksum mismatch"),
        ("record count too large", fix_crc(bytearray(good[:-16]) + struct.pack("<I", 99)
                                           + good[-12:]), "3 stream records, the file says 99"),
        ("bad id length", fix_crc(bytearray(good[:first_id]) + struct.pack("<I", 0)
                                  + good[first_id + 4:]), "bad id length"),
        ("trailing bytes", fix_crc(bytearray(good[:-12]) + b"\0" * 8 + struct.pack(
            "<QI", len(good) - 28 + 8, 0)), "stream 3: bad id length"),
    ]
    for k in range(3):
        b = bytearray(good)
        for _ in range(1 + k):
            b[rng.randrange(12, len(b) - 12)] ^= rng.randrange(1, 256)
        out.append(("random flips %d" % (k + 1), bytes(b), "length or checksum mismatch"))
    return out


def case_corrupt(env):
    rng = random.Random(SEED)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    path = os.path.join(d.state_dir, CKPT)
    with running(d):
        d.start()
        sock = env.pusher(d.ingest)
        want = {}
        for i, s in enumerate(STREAMS[:3]):
            v = series(rng, 300 + 100 * i)
            env.send_series(sock, s, v, batch=50)
            want[s] = len(v)
        sock.close()
        d.wait_samples(want)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        check(read_checkpoint(d.state_dir) == want, "the SIGTERM checkpoint holds %s"
              % read_checkpoint(d.state_dir))
        good = whole_file(d.state_dir)  # streams.ckpt, the file the cases edit
        cases = corruptions(good, rng)
        for name, data, reason in cases:
            with open(path, "wb") as f:
                f.write(data)
            d.start()
            outcome = restore_outcome(d)
            check(outcome.startswith("rejected") and reason in outcome,
                  "%s: expected a rejection naming \"%s\", got %s" % (name, reason, outcome))
            check("start empty" in outcome, "%s: %s" % (name, outcome))
            check(not d.status()["streams"], "%s: the daemon did not start empty" % name)
            check(not os.path.exists(path), "%s: the refused file was not moved aside" % name)
            with open(path + ".rejected", "rb") as f:
                check(f.read() == data, "%s: streams.ckpt.rejected is not the refused file"
                      % name)
            sock = env.pusher(d.ingest)  # and it works
            env.send_series(sock, "after/" + name, series(rng, 40), batch=40)
            sock.close()
            d.wait_samples({"after/" + name: 40})
            end(d)
            for n in group_files(d.state_dir):  # under a wrapper end() checkpointed it
                os.unlink(os.path.join(d.state_dir, n))
        with open(path, "wb") as f:
            f.write(good)
        d.start()
        check(restore_outcome(d) == "restored", "the intact file: %s" % restore_outcome(d))
        st = d.status()["streams"]
        check({s: v["samples"] for s, v in st.items()} == want,
              "the intact file restored %s, expected %s" % (st, want))
        end(d)
        # the same streams in a file of version 4 (before the magnitude history) restore
        # too, and are written again as the latest version
        for n in group_files(d.state_dir):
            os.unlink(os.path.join(d.state_dir, n))
        old = as_version_4(good)
        check(len(old) < len(good), "the version 4 file is not shorter")
        with open(path, "wb") as f:
            f.write(old)
        d.start()
        check(restore_outcome(d) == "restored", "the version 4 file: %s" % restore_outcome(d))
        st = d.status()["streams"]
        check({s: v["samples"] for s, v in st.items()} == want,
              "the version 4 file restored %s, expected %s" % (st, want))
        check(read_checkpoint(d.state_dir) == want, "the group files written from the "
              "version 4 file hold %s" % read_checkpoint(d.state_dir))
        for n in group_files(d.state_dir):
            with open(os.path.join(d.state_dir, n), "rb") as f:
                version, = struct.unpack_from("<I", f.read(12), 8)
            check(version == VERSION, "%s written as version %d" % (n, version))
        end(d)
    print("# %d corrupt checkpoints refused by real starts, each logged with its reason; "
          "the intact file restores, and so does its version 4 form" % len(cases))


# ---- unreadable ---------------------------------------------------------------------

EX_IOERR = 74  # sysexits.h: tsmined's exit when the checkpoint cannot be read


def start_refused(d, timeout=10):
    """Starts d expecting it to exit by itself; returns (exit status, seconds taken)."""
    t0 = time.monotonic()
    d.start(wait=False)
    try:
        rc = d.proc.wait(timeout * harness.SLOW)
    except subprocess.TimeoutExpired:
        raise Failure("tsmined still runs %d s after a start it should refuse" % timeout)
    d.log.close()
    return rc, time.monotonic() - t0


def peak_rss_mb(pid):
    """The peak resident memory of a running process (VmHWM), in MB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def as_nobody(env, d):
    """Under root, makes the daemon d run as nobody (setpriv), with its folders open to it,
    so that a file root owns with mode 0600 is unreadable to it; returns a function that
    undoes it, or None when setpriv is missing."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    wrapper = os.path.join(env.dir, "as-nobody.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec %s --reuid=65534 --regid=65534 --clear-groups -- %s \"$@\"\n"
                % (setpriv, env.tsmined))
    os.chmod(wrapper, 0o755)
    for p in (env.dir, d.dir):
        os.chmod(p, 0o755)
    os.chown(d.state_dir, 65534, 65534)
    real = env.tsmined
    env.tsmined = wrapper

    def undo():
        env.tsmined = real
        os.chown(d.state_dir, 0, 0)
    return undo


def case_unreadable(env):
    rng = random.Random(SEED)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    path = os.path.join(d.state_dir, CKPT)
    figures = []
    with running(d):
        d.start()
        sock = env.pusher(d.ingest)
        want = {}
        for i, s in enumerate(STREAMS[:3]):
            v = series(rng, 300 + 100 * i)
            env.send_series(sock, s, v, batch=50)
            want[s] = len(v)
        sock.close()
        d.wait_samples(want)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        good = whole_file(d.state_dir)  # streams.ckpt, the file the cases edit
        with open(path, "wb") as f:
            f.write(good)

        def refused(name, must_say):
            rc, secs = start_refused(d)
            log = last_start_log(d)
            check(rc == EX_IOERR, "%s: tsmined exited %d, expected %d (EX_IOERR)"
                  % (name, rc, EX_IOERR))
            check(must_say in log and "left in place" in log,
                  "%s: the log does not say \"%s\" and that the file is left in place"
                  % (name, must_say))
            check(not os.path.exists(path + ".rejected"), "%s: moved aside" % name)
            figures.append("%s: exit %d in %.2f s" % (name, rc, secs))

        # permission denied: the file stays byte for byte, and restores once readable
        if os.geteuid() == 0:
            undo = as_nobody(env, d)
            if undo is None:
                print("# SKIP the permission case: running as root without setpriv")
            else:
                try:
                    os.chmod(path, 0o600)  # root's, unreadable to nobody
                    refused("permission denied", "Permission denied")
                finally:
                    undo()
        else:
            os.chmod(path, 0)
            try:
                refused("permission denied", "Permission denied")
            finally:
                os.chmod(path, 0o600)
        with open(path, "rb") as f:
            check(f.read() == good, "the unreadable checkpoint changed")

        # not regular files: opened without blocking or following, refused unread
        os.rename(path, path + ".keep")
        os.mkfifo(path)
        refused("a FIFO", "a FIFO")
        check(os.path.exists(path) and not os.path.isfile(path), "the FIFO is gone")
        os.unlink(path)
        os.symlink("/dev/zero", path)
        refused("a link to /dev/zero", "a symbolic link")
        check(os.readlink(path) == "/dev/zero", "the link changed")
        os.unlink(path)
        os.mkdir(path)
        refused("a directory", "a directory")
        os.rmdir(path)

        # a 2 GiB sparse file: a regular file, read as far as its first bytes
        with open(path, "wb") as f:
            f.truncate(2 << 30)
        t0 = time.monotonic()
        d.start()
        secs = time.monotonic() - t0
        outcome = restore_outcome(d)
        check(outcome.startswith("rejected") and "not a tsmine stream checkpoint" in outcome,
              "the sparse file: %s" % outcome)
        rss = peak_rss_mb(d.proc.pid)
        check(rss < 200, "the sparse file: peak RSS %.0f MB" % rss)
        check(not d.status()["streams"], "the sparse file: streams restored")
        figures.append("2 GiB sparse file: refused, started in %.2f s, peak RSS %.0f MB"
                       % (secs, rss))
        end(d)
        os.unlink(path + ".rejected")

        os.rename(path + ".keep", path)
        d.start()
        check(restore_outcome(d) == "restored", "the intact file: %s" % restore_outcome(d))
        st = d.status()["streams"]
        check({s: v["samples"] for s, v in st.items()} == want,
              "the intact file restored %s, expected %s" % (st, want))
        end(d)
    for line in figures:
        print("# " + line)


# ---- config_change ------------------------------------------------------------------

def case_config_change(env):
    rng = random.Random(SEED)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0, "max_streams": 10})
    ids = ["cc/%d" % i for i in range(6)]
    with running(d):
        d.start()
        sock = env.pusher(d.ingest)
        want = {}
        for i, s in enumerate(ids):  # created in this order
            v = series(rng, 600 + 10 * i)
            env.send_series(sock, s, v, batch=100)
            d.wait_samples({s: len(v)})
            want[s] = len(v)
        sock.close()
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        on_disk = read_checkpoint(d.state_dir)
        check(on_disk == want, "the checkpoint holds %s" % on_disk)

        new = dict(PARAMS, hop=64, window=1024, threshold=0.99)
        d.params = new
        d.limits["max_streams"] = 4
        d.start()
        log = last_start_log(d)
        check(restore_outcome(d) == "restored", "restart: %s" % restore_outcome(d))
        st = d.status()
        kept = sorted(st["streams"])
        check(kept == ids[:4], "restored %s, expected the first four created %s"
              % (kept, ids[:4]))
        check(all(st["streams"][s]["next_seq"] == want[s] for s in kept),
              "the kept streams changed: %s" % st["streams"])
        check(st["counters"].get("checkpoint_streams_dropped") == 2,
              "checkpoint_streams_dropped = %s" % st["counters"].get("checkpoint_streams_dropped"))
        check("2 more streams dropped, beyond max_streams = 4" in log and '"cc/4"' in log,
              "the log does not report the dropped streams")
        for s in kept:
            v = st["streams"][s]
            check(v["hop"] == 64 and v["window"] == 1024 and abs(v["threshold"] - 0.99) < 1e-12,
                  "%s runs on the checkpoint's parameters after the restart: %s" % (s, v))
        check("4 streams of the checkpoint took the configuration's parameters" in log,
              "the log does not say the parameters were applied")
        end(d)
    print("# max_streams 10 -> 4: the first 4 of 6 streams restored, 2 dropped and counted; "
          "hop 128 -> 64, window 512 -> 1024, threshold -> 0.99 in force at the restart")


CASES = {"kill": case_kill, "corrupt": case_corrupt, "unreadable": case_unreadable,
         "config_change": case_config_change}


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES, SEED))
