#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""service_test.py - what systemd's unit relies on (issue 18 item 5; systemd/tsmined.service.in),
through the real tsmined:

    service_test.py --case NAME --tsmined PATH --tsmine PATH --proto PATH --data DIR

Cases:
  reload        ExecReload=tsmined --reload $MAINPID: with $RUNTIME_DIRECTORY set as
                systemd sets it, a good configuration change exits 0 ("reload done")
                and takes effect; a broken file exits 78 with the reason, the daemon
                runs on with the old configuration and counts reload_failures; a
                process that is not a tsmined gets 69 within the timeout; without
                RUNTIME_DIRECTORY it is a usage error (64).
  check_quiet   ExecStartPre=tsmined --check-config --quiet: silent and 0 on a good
                file, the error and 78 on a bad one.

Prints `ok - NAME` or `not ok - NAME` with the reason; exits 0, 1, or 77 (skipped).
"""

import os
import subprocess
import sys
import time

import harness
from harness import check


def reload_cmd(env, pid, rundir, timeout=30):
    e = dict(os.environ)
    if rundir is None:
        e.pop("RUNTIME_DIRECTORY", None)
    else:
        e["RUNTIME_DIRECTORY"] = rundir
    t0 = time.monotonic()
    p = subprocess.run([env.tsmined, "--reload", str(pid)], capture_output=True, text=True,
                       env=e, timeout=timeout)
    return p, time.monotonic() - t0


def case_reload(env):
    rundir = os.path.join(env.dir, "run")
    os.makedirs(rundir)
    with env.daemon(params={"window": 512, "hop": 128},
                    extra_env={"RUNTIME_DIRECTORY": rundir}) as d:
        # a good change: hop 128 -> 64
        d.params["hop"] = 64
        d.write_config()
        p, took = reload_cmd(env, d.proc.pid, rundir)
        check(p.returncode == 0 and "reload done" in p.stdout,
              "good reload: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))
        print("# good reload answered in %.0f ms: %s" % (1000 * took, p.stdout.strip()))
        push = env.pusher(d.ingest)
        push.send(env.batch("s", 0, [float(k % 7) for k in range(100)]))
        d.wait_samples({"s": 100})
        check(d.status()["streams"]["s"]["hop"] == 64, "the new hop is not in force")
        # a broken file: refused, the old configuration runs on
        with open(d.conf, "a") as f:
            f.write("limits = { max_streams = \"many\"; };\n")
        p, took = reload_cmd(env, d.proc.pid, rundir)
        check(p.returncode == 78 and "refused" in p.stderr and "max_streams" in p.stderr,
              "bad reload: exit %d, %r" % (p.returncode, p.stderr))
        print("# bad reload answered in %.0f ms: %s" % (1000 * took, p.stderr.strip()))
        check(d.proc.poll() is None, "the daemon died on a bad reload")
        c = d.status()["counters"]
        check(c["reload_failures"] == 1 and c["reloads"] == 2,
              "reload counters: %s of %s" % (c["reload_failures"], c["reloads"]))
        push.send(env.batch("s", 100, [1.0] * 10))
        d.wait_samples({"s": 110})
        push.close()
        # no RUNTIME_DIRECTORY: usage
        p, _ = reload_cmd(env, d.proc.pid, None)
        check(p.returncode == 64 and "RUNTIME_DIRECTORY" in p.stderr,
              "no runtime directory: exit %d, %r" % (p.returncode, p.stderr))
    # a process that never answers (not a tsmined: SIGHUP is ignored by it)
    sleeper = subprocess.Popen(["python3", "-c", "import signal, time; "
                                "signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60)"])
    try:
        time.sleep(0.2)
        e = dict(os.environ, RUNTIME_DIRECTORY=rundir)
        p = subprocess.run([env.tsmined, "--reload", str(sleeper.pid), "--timeout-ms", "1500"],
                           capture_output=True, text=True, env=e, timeout=30)
        check(p.returncode == 69, "silent process: exit %d, %r" % (p.returncode, p.stderr))
    finally:
        sleeper.kill()
        sleeper.wait()


def case_check_quiet(env):
    good = os.path.join(env.dir, "good.conf")
    bad = os.path.join(env.dir, "bad.conf")
    with open(good, "w") as f:
        f.write("limits = { max_streams = 10; };\n")
    with open(bad, "w") as f:
        f.write("limits = { max_streams = -1; };\n")
    p = subprocess.run([env.tsmined, "-c", good, "--check-config", "--quiet"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "",
          "good file: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([env.tsmined, "-c", bad, "--check-config", "--quiet"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 78 and "max_streams" in p.stderr,
          "bad file: exit %d, %r" % (p.returncode, p.stderr))


CASES = {"reload": case_reload, "check_quiet": case_check_quiet}

if __name__ == "__main__":
    sys.exit(harness.run_cases(__doc__, CASES))
