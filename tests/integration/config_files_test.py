#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""config_files_test.py - tsmined given a configuration path that is not a regular file
(issue 17 item 7), through its real command line and SIGHUP: the real daemon on free
loopback ports (harness.py).

    config_files_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

libconfig's scanner calls exit(2) when a read fails, and stdio blocks opening a FIFO:
before the fix a directory given as -c (or as an @include) made tsmined exit 2, at start
or on SIGHUP, and a FIFO hung it. Cases:
  start   -c DIR, a FIFO, a socket, /dev/zero, a file that @includes a directory or a
          FIFO: each exits 78 (EX_CONFIG) within START_BOUND_S, naming the path and what
          it is; --check-config the same.
  reload  a running daemon whose configuration file is replaced by a directory, a FIFO,
          a socket, a file that @includes a directory, and (not as root) an unreadable
          file, with a SIGHUP each: it keeps running on the configuration it has, answers
          its control socket within RELOAD_BOUND_S of each SIGHUP, counts
          reload_failures and logs the path; samples sent throughout are all counted; a
          valid file is then reloaded.
Prints `ok - NAME` or `not ok - NAME`; exits 0, 1, or 77.
"""

import os
import signal
import socket
import subprocess
import sys
import time

import harness
from harness import Failure, check, wait_until

# A refusal takes ~10 ms; the bound is for a loaded 2-core CI machine.
START_BOUND_S = 5.0
# From SIGHUP to a STATUS reply that counts the reload: ~20 ms here.
RELOAD_BOUND_S = 2.0


def make_bad(path, kind, keep=None):
    """Puts a `kind` at path: dir, fifo, socket, include_dir, include_fifo, unreadable.
    Returns an object to keep alive (the socket) or None."""
    top = os.path.dirname(path)
    if kind == "dir":
        os.makedirs(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        return s
    elif kind in ("include_dir", "include_fifo"):
        target = os.path.join(top, "inc.d" if kind == "include_dir" else "inc.fifo")
        if not os.path.exists(target):
            (os.makedirs if kind == "include_dir" else os.mkfifo)(target)
        with open(path, "w") as f:
            f.write((keep or "") + "\n@include \"%s\"\n" % os.path.basename(target))
    elif kind == "unreadable":
        with open(path, "w") as f:
            f.write(keep or "")
        os.chmod(path, 0)
    return None


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        os.rmdir(path)
    elif os.path.lexists(path):
        os.unlink(path)


WANT = {"dir": "not a regular file (a directory)", "fifo": "not a regular file (a FIFO)",
        "socket": "not a regular file (a socket)",
        "include_dir": "@include \"inc.d\": ", "include_fifo": "@include \"inc.fifo\": ",
        "unreadable": "cannot open: Permission denied",
        "dev_zero": "not a regular file (a character device)"}


def case_start(env):
    worst = 0.0
    kinds = ["dir", "fifo", "socket", "include_dir", "include_fifo", "dev_zero"]
    for i, kind in enumerate(kinds):
        top = os.path.join(env.dir, "s%d" % i)
        os.makedirs(top)
        path = os.path.join(top, "tsmined.conf")
        if kind == "dev_zero":
            os.symlink("/dev/zero", path)
            keep = None
        else:
            keep = make_bad(path, kind, "threads = 1;")
        for extra in (["--check-config"], []):
            t0 = time.monotonic()
            try:
                p = subprocess.run([env.tsmined, "-c", path] + extra, capture_output=True,
                                   text=True, timeout=START_BOUND_S * 4 * harness.SLOW)
            except subprocess.TimeoutExpired:
                raise Failure("%s%s: tsmined still running after %.0f s" %
                              (kind, " --check-config" if extra else "",
                               START_BOUND_S * 4 * harness.SLOW))
            took = time.monotonic() - t0
            worst = max(worst, took)
            where = "%s%s" % (kind, " --check-config" if extra else "")
            check(p.returncode == 78, "%s: exit %d, expected 78: %s" %
                  (where, p.returncode, p.stderr.strip()[-300:]))
            check(WANT[kind] in p.stderr and top in p.stderr,
                  "%s: the message lacks %r and the path: %s" % (where, WANT[kind], p.stderr))
            check(took < START_BOUND_S * harness.SLOW, "%s: took %.2f s" % (where, took))
        if keep:
            keep.close()
    print("# %d refusals, the slowest in %.3f s" % (2 * len(kinds), worst))


def case_reload(env):
    kinds = ["dir", "fifo", "socket", "include_dir", "include_fifo"]
    if os.geteuid() != 0:  # root reads a mode-0 file anyway
        kinds.append("unreadable")
    # hop = window: no windowed pass runs on these 600 samples (none is needed here)
    with env.daemon(params={"window": 1024, "hop": 1024}) as d:
        with open(d.conf) as f:
            good = f.read()
        sock = env.pusher(d.ingest)
        sent, worst = 0, 0.0
        for n, kind in enumerate(kinds, 1):
            sent += env.send_series(sock, "feed", [float(k % 9) for k in range(100)],
                                    batch=50, first_seq=sent)
            remove(d.conf)
            keep = make_bad(d.conf, kind, good)
            t0 = time.monotonic()
            d.signal(signal.SIGHUP)
            c = wait_until(lambda: (d.status(timeout_ms=int(RELOAD_BOUND_S * 1000))
                                    ["counters"]), 10, "a status reply")
            wait_until(lambda: d.status()["counters"]["reload_failures"] >= n, 10,
                       "reload %d (%s) to be counted" % (n, kind))
            took = time.monotonic() - t0
            worst = max(worst, took)
            check(d.proc.poll() is None, "%s: tsmined exited (status %s) on SIGHUP" %
                  (kind, d.proc.returncode))
            c = d.status()["counters"]
            check(c["reload_failures"] == n and c["reloads"] == n,
                  "%s: reloads %d, reload_failures %d" % (kind, c["reloads"],
                                                          c["reload_failures"]))
            check(took < RELOAD_BOUND_S * harness.SLOW, "%s: the reload was answered %.2f s "
                  "after SIGHUP" % (kind, took))
            if keep:
                keep.close()
            if kind == "unreadable":
                os.chmod(d.conf, 0o600)
            remove(d.conf)
        with open(d.log_path) as f:
            log = f.read()
        for kind in kinds:
            check(WANT[kind] in log, "the log lacks %r" % WANT[kind])
        check(log.count("keeping the running configuration") >= len(kinds),
              "the refused reloads do not say the configuration stays")
        # a valid file again, with a live change
        d.params["hop"] = 512
        d.write_config()
        d.signal(signal.SIGHUP)
        wait_until(lambda: d.status()["counters"]["reloads"] == len(kinds) + 1, 10,
                   "the valid reload")
        sent += env.send_series(sock, "feed", [float(k % 9) for k in range(100)], batch=50,
                                first_seq=sent)
        st = d.wait_samples({"feed": sent})
        check(st["feed"]["hop"] == 512, "the valid reload did not apply: hop %d" %
              st["feed"]["hop"])
        check(d.status()["counters"]["reload_failures"] == len(kinds), "reload_failures moved")
        sock.close()
        print("# %d refused reloads, each answered within %.3f s of its SIGHUP; %d samples "
              "all counted" % (len(kinds), worst, sent))
        check(d.stop() == 0, "tsmined did not exit 0 on SIGTERM")


CASES = {f.__name__[5:]: f for f in (case_start, case_reload)}

if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES))
