#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""restore_test.py - nothing lost across a restart (issue 27), through the real daemon.

Cases (one per ctest entry, --case NAME):
  duplicate  a stream saved twice in one group file, older record after the newer and
             before it: every stream restores, the newer record is kept (later epoch,
             then higher next_seq), the other is logged with its file and counted
             (checkpoint_duplicates); no file is rejected, and after SIGTERM every group
             file is whole again with each stream once. Before: `stream "..." twice;
             starting empty`, and the first checkpoint emptied the state directory.
  legacy     the file of every stream (streams.ckpt, format 5) beside the group files
             that replace it, older than they are, newer, and the same: every stream
             restores once with its newer record, and streams.ckpt is removed only once
             the groups are written. Before: 0 streams restored and every file deleted.
  conversion a conversion from streams.ckpt to group files cut short at each step
             (after k of the group files, with a torn temporary file beside them; after
             the last one, before streams.ckpt is removed), and SIGKILL at random
             moments of real conversions of 300 streams: every next start restores
             every stream with the next_seq it had.
  enospc     the conversion with ENOSPC on each group file in turn (an LD_PRELOAD
             library fails fsync of that file: tests/integration/enospc_shim.c): the
             failure is logged, streams.ckpt stays, SIGTERM exits 74 saying exactly how
             many streams are NOT checkpointed (that group's), and the next start
             restores every stream (that group's from streams.ckpt, the others from
             their new files), then finishes the conversion.
  kill_ack   55 cycles (12 under valgrind or TSan): publish, take a STATUS snapshot, ask for a CHECKPOINT, publish
             on (every third cycle until a periodic checkpoint is seen being written),
             SIGKILL, restart: every stream's next_seq is at least the snapshot the last
             acknowledged CHECKPOINT covered, and equals what the files on disk hold
             (an independent parser: crash_test.py).

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import os
import random
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crash_test  # noqa: E402  (the checkpoint parser, the restore log line)
import harness  # noqa: E402
from harness import Failure, check  # noqa: E402

SEED = int(os.environ.get("TSM_TEST_SEED", "20261207"))
STREAMS = ["restore/%02d" % i for i in range(12)]
# two more of restore/00's group, so that one group file holds three streams
STREAMS += [s for s in ("restore/x%d" % i for i in range(5000))
            if crash_test.group_of(s) == crash_test.group_of(STREAMS[0])][:2]
PARAMS = crash_test.PARAMS
BATCH = 64
LEGACY = crash_test.CKPT  # streams.ckpt
EXIT_IOERR = 74


def series(rng, n):
    return crash_test.series(rng, n)


def feed(env, d, values, start, upto):
    """Sends every stream's samples [start[s], upto) and waits until they are counted;
    returns {s: upto}."""
    sock = env.pusher(d.ingest)
    for s in values:
        env.send_series(sock, s, values[s][start[s]:upto], batch=BATCH, first_seq=start[s])
    sock.close()
    d.wait_samples({s: upto for s in values})
    return {s: upto for s in values}


def files(state_dir):
    """{name: bytes} of the checkpoint files (group files and streams.ckpt)."""
    out = {}
    for n in os.listdir(state_dir):
        if n == LEGACY or (n.startswith("streams-") and n.endswith(".ckpt")):
            with open(os.path.join(state_dir, n), "rb") as f:
                out[n] = f.read()
    return out


def lay(state_dir, content):
    """Makes the state directory hold exactly content ({name: bytes})."""
    for n in os.listdir(state_dir):
        os.unlink(os.path.join(state_dir, n))
    for n, b in content.items():
        with open(os.path.join(state_dir, n), "wb") as f:
            f.write(b)


def records_of(data):
    """[(creation index, record bytes)] of one checkpoint file."""
    recs = []
    crash_test.parse_checkpoint(data, recs)
    return recs


def build(group, recs):
    """A checkpoint file of group (crash_test.ALL: every stream) holding recs (record
    bytes, in order), framed and checksummed as stream/checkpoint.c writes it. The
    independent parser refuses a stream twice, so this does not go through it."""
    return crash_test.framed(crash_test.VERSION, group, recs)


def legacy_of(content):
    """The file of every stream holding the records of content's group files."""
    recs = []
    for n in sorted(content):
        if n != LEGACY:
            recs += records_of(content[n])
    return build(crash_test.ALL, [r for _, r in sorted(recs)])


def restored(d):
    return {s: v["next_seq"] for s, v in d.status()["streams"].items()}


def two_checkpoints(env, d, rng, n1, n2):
    """Feeds every stream to n1 and stops (the older files), then to n2 and stops (the
    newer ones); returns (values, older files, newer files)."""
    values = {s: series(rng, n2) for s in STREAMS}
    d.start()
    feed(env, d, values, {s: 0 for s in STREAMS}, n1)
    check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
    old = files(d.state_dir)
    d.start()
    feed(env, d, values, {s: n1 for s in STREAMS}, n2)
    check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
    return values, old, files(d.state_dir)


def start_restoring(d, expect, what):
    """Starts d and checks the restore: one 'restored' line, every stream with its
    expected next_seq, nothing rejected."""
    d.start()
    outcome = crash_test.restore_outcome(d)
    check(outcome == "restored", "%s: %s" % (what, outcome))
    got = restored(d)
    check(got == expect, "%s: restored %s, expected %s" % (what, got, expect))
    rejected = [n for n in os.listdir(d.state_dir) if n.endswith(".rejected")]
    check(not rejected, "%s: files rejected: %s" % (what, rejected))


def case_duplicate(env):
    rng = random.Random(SEED)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    n1, n2 = 600, 1200
    with crash_test.running(d):
        values, old, new = two_checkpoints(env, d, rng, n1, n2)
        victim = STREAMS[3]
        name = "streams-%02x.ckpt" % crash_test.group_of(victim)
        old_rec = [r for _, r in records_of(old[name])
                   if crash_test.parse_checkpoint(build(crash_test.ALL, [r])).get(victim)]
        check(len(old_rec) == 1, "no older record of %s" % victim)
        new_recs = [r for _, r in records_of(new[name])]
        for order, recs in (("older after", new_recs + old_rec),
                            ("older first", old_rec + new_recs)):
            content = dict(new)
            content[name] = build(crash_test.group_of(victim), recs)
            lay(d.state_dir, content)
            start_restoring(d, {s: n2 for s in STREAMS}, "%s twice (%s)" % (victim, order))
            log = crash_test.last_start_log(d)
            check(re.search(r'stream "%s" saved twice: the record in %s \(epoch \d+, '
                            r'next_seq %d\) is set aside for the one in %s \(epoch \d+, '
                            r'next_seq %d\)' % (re.escape(victim), re.escape(name), n1,
                                                re.escape(name), n2), log),
                  "%s: the log does not say which record was set aside:\n%s" % (order, log))
            dups = d.status()["counters"].get("checkpoint_duplicates")
            check(dups == 1, "%s: checkpoint_duplicates = %s" % (order, dups))
            check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
            on_disk = crash_test.read_checkpoint(d.state_dir)  # each stream once, whole
            check(on_disk == {s: n2 for s in STREAMS},
                  "%s: after SIGTERM the files hold %s" % (order, on_disk))
    print("# %d streams; %s saved twice in %s (next_seq %d and %d), either order: all "
          "restored, the newer kept, 1 counted, the file rewritten whole at SIGTERM"
          % (len(STREAMS), victim, name, n1, n2))


def case_legacy(env):
    rng = random.Random(SEED + 1)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    n1, n2 = 600, 1200
    with crash_test.running(d):
        values, old, new = two_checkpoints(env, d, rng, n1, n2)
        cases = (("older than its groups", new, legacy_of(old), n2),
                 ("newer than its groups", old, legacy_of(new), n2),
                 ("the same as its groups", new, legacy_of(new), n2))
        for what, groups, legacy, expect in cases:
            content = dict(groups)
            content[LEGACY] = legacy
            lay(d.state_dir, content)
            start_restoring(d, {s: expect for s in STREAMS}, "streams.ckpt %s" % what)
            dups = d.status()["counters"].get("checkpoint_duplicates")
            check(dups == len(STREAMS), "%s: checkpoint_duplicates = %s" % (what, dups))
            # the conversion at start wrote every group: streams.ckpt is gone
            check(not os.path.exists(os.path.join(d.state_dir, LEGACY)),
                  "%s: streams.ckpt still there after the conversion" % what)
            on_disk = crash_test.read_checkpoint(d.state_dir)
            check(on_disk == {s: expect for s in STREAMS},
                  "%s: the group files hold %s" % (what, on_disk))
            check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
    print("# streams.ckpt beside its %d group files, older, newer and the same: %d streams "
          "restored once each, the newer record kept; streams.ckpt removed after the groups"
          % (len([n for n in new if n != LEGACY]), len(STREAMS)))


def kill_soon(d, delay):
    """Starts d without waiting and SIGKILLs it after delay seconds (or once it exited)."""
    d.start(wait=False)
    try:
        d.proc.wait(delay)
    except harness.subprocess.TimeoutExpired:
        pass
    d.kill()


def case_conversion(env):
    rng = random.Random(SEED + 2)
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 0})
    n = 600
    with crash_test.running(d):
        values = {s: series(rng, n) for s in STREAMS}
        d.start()
        feed(env, d, values, {s: 0 for s in STREAMS}, n)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        groups = files(d.state_dir)
        legacy = legacy_of(groups)
        names = sorted(groups)  # the order the conversion writes them in (by group)
        expect = {s: n for s in STREAMS}
        # a crash after k group files were renamed into place (one more torn beside them),
        # and after the last one, before streams.ckpt was removed
        for k in range(len(names) + 1):
            content = {nm: groups[nm] for nm in names[:k]}
            content[LEGACY] = legacy
            lay(d.state_dir, content)
            if k < len(names):
                with open(os.path.join(d.state_dir, "." + names[k] + ".Xa1b2c"), "wb") as f:
                    f.write(groups[names[k]][:len(groups[names[k]]) // 2])
            start_restoring(d, expect, "a conversion cut after %d of %d group files"
                            % (k, len(names)))
            check(not os.path.exists(os.path.join(d.state_dir, LEGACY)),
                  "streams.ckpt still there after a finished conversion")
            check(crash_test.read_checkpoint(d.state_dir) == expect,
                  "after %d: the group files hold %s" % (k, crash_test.read_checkpoint(d.state_dir)))
            d.kill()
        # real conversions of many streams, SIGKILLed at random moments
        many = ["conv/%03d" % i for i in range(300)]
        vals = {s: series(rng, 300) for s in many}
        lay(d.state_dir, {})
        d.start()
        feed(env, d, vals, {s: 0 for s in many}, 300)
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        legacy_many = legacy_of(files(d.state_dir))
        expect = {s: 300 for s in many}
        kills, mid = 12, 0
        for cycle in range(kills):
            lay(d.state_dir, {LEGACY: legacy_many})
            kill_soon(d, rng.uniform(0.0, 0.4 * harness.SLOW))
            on_disk = files(d.state_dir)
            mid += LEGACY in on_disk and len(on_disk) > 1
            d.start()
            got = restored(d)
            check(got == expect, "kill %d of a conversion (left %d files): %d of %d streams "
                  "restored" % (cycle, len(on_disk), len(got), len(expect)))
            d.kill()
    print("# a conversion cut after each of its %d group files, and %d SIGKILLs of real "
          "conversions of 300 streams (%d left both streams.ckpt and group files): every "
          "start restored every stream" % (len(names), kills, mid))


def shim_env():
    """The environment that preloads enospc_shim (its path: TSM_ENOSPC_SHIM)."""
    shim = os.environ.get("TSM_ENOSPC_SHIM", "")
    env = {"LD_PRELOAD": shim}
    if os.environ.get("ASAN_OPTIONS"):  # the shim comes before the ASan runtime
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    return env


def case_enospc(env):
    shim = os.environ.get("TSM_ENOSPC_SHIM", "")
    if not os.path.isfile(shim):
        print("SKIP: TSM_ENOSPC_SHIM is not a built library (%r)" % shim)
        return 77
    rng = random.Random(SEED + 3)
    plain = env.daemon(name="plain", params=PARAMS, limits={"checkpoint_interval": 0})
    n1, n2 = 600, 900
    with crash_test.running(plain):
        values = {s: series(rng, n2) for s in STREAMS}
        plain.start()
        feed(env, plain, values, {s: 0 for s in STREAMS}, n1)
        check(plain.stop() == 0, "tsmined did not exit 0 on SIGTERM")
        legacy = legacy_of(files(plain.state_dir))
    names = sorted("streams-%02x.ckpt" % g for g in {crash_test.group_of(s) for s in STREAMS})
    for name in names:
        members = [s for s in STREAMS if "streams-%02x.ckpt" % crash_test.group_of(s) == name]
        extra = shim_env()
        extra["TSM_TEST_ENOSPC"] = name
        d = env.daemon(name="full%d" % names.index(name), params=PARAMS, limits={"checkpoint_interval": 0},
                       extra_env=extra)
        with crash_test.running(d):
            lay(d.state_dir, {LEGACY: legacy})
            start_restoring(d, {s: n1 for s in STREAMS}, "ENOSPC on %s" % name)
            log = crash_test.last_start_log(d)
            check("No space left on device" in log, "ENOSPC on %s: not in the log" % name)
            check(os.path.exists(os.path.join(d.state_dir, LEGACY)),
                  "ENOSPC on %s: streams.ckpt removed although a group failed" % name)
            feed(env, d, values, {s: n1 for s in STREAMS}, n2)
            rc = d.stop()
            check(rc == EXIT_IOERR, "ENOSPC on %s: exit %d after SIGTERM" % (name, rc))
            log = crash_test.last_start_log(d)
            m = re.search(r"(\d+) streams checkpointed, (\d+) NOT checkpointed", log)
            check(m and int(m.group(1)) == len(STREAMS) - len(members) and
                  int(m.group(2)) == len(members),
                  "ENOSPC on %s (%d streams): the stop says %s" % (name, len(members),
                                                                  m and m.group(0)))
            # the next start, on a disk with room: that group's streams from streams.ckpt
            d.extra_env = {}
            start_restoring(d, {s: n1 if s in members else n2 for s in STREAMS},
                            "the start after ENOSPC on %s" % name)
            check(not os.path.exists(os.path.join(d.state_dir, LEGACY)),
                  "streams.ckpt still there after the conversion finished")
            check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")
    print("# ENOSPC on each of %d group files in turn during the conversion of %d streams: "
          "streams.ckpt kept, exit 74 naming exactly that group's streams, every stream "
          "restored at the next start" % (len(names), len(STREAMS)))


def case_kill_ack(env):
    rng = random.Random(SEED + 4)
    cycles = 55 if not harness.WRAPPER else 12  # (valgrind: a start takes seconds)
    streams = crash_test.STREAMS
    values = {s: crash_test.series(rng, int(crash_test.RATE * cycles * 1.2) + 10000)
              for s in streams}
    d = env.daemon(params=PARAMS, limits={"checkpoint_interval": 1})
    acked = {s: 0 for s in streams}
    worst, mid_write, restored_total = 0, 0, 0
    with crash_test.running(d):
        for cycle in range(cycles + 1):
            on_disk = crash_test.read_checkpoint(d.state_dir) or {}
            d.start()
            got = restored(d)
            restored_total += len(got)
            check(got == on_disk, "cycle %d: restored %s, the files hold %s"
                  % (cycle, got, on_disk))
            back = max(acked[s] - got.get(s, 0) for s in streams)
            worst = max(worst, back)
            check(back <= 0, "cycle %d: next_seq %s behind the last acknowledged CHECKPOINT "
                  "%s" % (cycle, got, acked))
            if cycle == cycles:
                break
            first = {s: got.get(s, 0) for s in streams}
            sent = crash_test.publish(env, d, values, first, rng.uniform(0.05, 0.4),
                                      kill=False)
            d.wait_samples(sent)
            snap = restored(d)
            reply = d.request(env.pb.ControlRequest.CHECKPOINT, timeout_ms=10000)
            check(reply.ok, "cycle %d: CHECKPOINT refused: %s" % (cycle, reply.error))
            acked = snap
            hunt = cycle % 3 == 0
            crash_test.publish(env, d, values, sent, 2.0 if hunt else rng.uniform(0.0, 0.6),
                               hunt=hunt)
            mid_write += bool(crash_test.temp_files(d.state_dir))
    print("# %d SIGKILL cycles (%d during a checkpoint write): %d streams restored in all, "
          "the largest next_seq regression against the last acknowledged CHECKPOINT: %d"
          % (cycles, mid_write, restored_total, worst))


CASES = {"duplicate": case_duplicate, "legacy": case_legacy, "conversion": case_conversion,
         "enospc": case_enospc, "kill_ack": case_kill_ack}


if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES, SEED))
