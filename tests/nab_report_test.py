#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nab_report_test.py - the end of `tools/dev demo` (issue 32): tools/scripts/nab-report
on the alerts of the three bundled NAB feeds, as the demo runs it, against `tsmine
score` on the same alerts, and its pictures.

The alerts are `tsmine detect`'s on tests/data/*.csv (exactly what tsmined publishes for
those samples: tests/integration/events_test.py, detect_daemon), named nab/FEED as the
demo names its streams. Checked:
  - the table has one row per feed of tests/data/nab_windows.json and a row "all";
    WINDOWS, FOUND, MISSED and OUTSIDE are `tsmine score --per-file`'s windows,
    windows_hit, windows - windows_hit and false_alerts for that file, and "all" their
    sums; the NAB score line is score's standard profile as published;
  - each picture it names exists, is a valid PNG (signature, every chunk's CRC, IHDR
    1200 x 600 RGB, IEND last, the image data inflating to its size) and has the marks
    in it: the green tint of every labelled window in the column through its middle,
    and the orange of the events (trace and bands) where the feed has ANOMALY alerts;
  - bad arguments exit 64, and a tsmine score that fails makes it exit 1.

    nab_report_test.py --tsmine PATH --script tools/scripts/nab-report --data tests/data

Prints "ok - ..." lines and exits 0, or 1 with every failure. Python standard library.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_test  # noqa: E402  (read_png)

failures = plot_test.failures  # one list, and plot_test's check() that fills it
check = plot_test.check


def valid_png(path):
    """Why path is not a valid 1200 x 600 RGB PNG, or None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return "no PNG signature"
    pos, kinds, idat, ihdr = 8, [], b"", None
    while pos < len(data):
        if pos + 12 > len(data):
            return "a truncated chunk at byte %d" % pos
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc, = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xffffffff != crc:
            return "chunk %s at byte %d: bad CRC" % (kind, pos)
        kinds.append(kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if not kinds or kinds[0] != b"IHDR" or kinds[-1] != b"IEND":
        return "chunks %s: not IHDR first and IEND last" % kinds
    w, h, depth, ctype = ihdr[:4]
    if (w, h, depth, ctype) != (1200, 600, 8, 2):
        return "IHDR %s: not 1200 x 600 8-bit RGB" % (ihdr,)
    if len(zlib.decompress(idat)) != h * (1 + 3 * w):
        return "the image data do not inflate to %d rows of %d pixels" % (h, w)
    return None


def table_of(out):
    """{FEED: (windows, found, missed, outside, picture)} and the NAB score line."""
    lines = out.splitlines()
    check(lines and lines[0].split() == ["FEED", "WINDOWS", "FOUND", "MISSED", "OUTSIDE",
                                         "PICTURE"], "the table's head: %r" % lines[:1])
    rows = {}
    for ln in lines[1:]:
        f = ln.split()
        if len(f) >= 5 and f[1].isdigit():
            rows[f[0]] = tuple(int(x) for x in f[1:5]) + (f[5] if len(f) > 5 else None,)
    score = next((ln for ln in lines if ln.startswith("NAB score")), "")
    return rows, score


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsmine", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    windows = os.path.join(a.data, "nab_windows.json")
    with open(windows) as f:
        labelled = json.load(f)
    feeds = sorted(os.path.splitext(k)[0] for k in labelled)
    with tempfile.TemporaryDirectory(prefix="tsmine-nab-report.") as work:
        p = subprocess.run([a.tsmine, "detect", "-q"] +
                           [os.path.join(a.data, f + ".csv") for f in feeds],
                           capture_output=True, text=True, timeout=600)
        if not check(p.returncode == 0, "tsmine detect: exit %d: %s" % (p.returncode,
                                                                          p.stderr)):
            return 1
        alerts = [json.loads(ln) for ln in p.stdout.splitlines()]
        for x in alerts:
            x["stream_id"] = "nab/" + x["stream_id"]  # as the demo names them
        path = os.path.join(work, "alerts.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in alerts)

        out = os.path.join(work, "pictures")
        p = subprocess.run([a.script, "--tsmine", a.tsmine, "--windows", windows, "--data",
                            a.data, "--out", out, path], capture_output=True, text=True,
                           timeout=600)
        if not check(p.returncode == 0, "nab-report: exit %d: %s" % (p.returncode, p.stderr)):
            return 1
        print("# " + p.stdout.replace("\n", "\n# ").rstrip("# "))
        rows, score_line = table_of(p.stdout)

        # the same alerts through tsmine score itself
        s = subprocess.run([a.tsmine, "score", "--windows", windows, "--data", a.data,
                            "--per-file", path], capture_output=True, text=True, timeout=600)
        check(s.returncode == 0, "tsmine score: exit %d: %s" % (s.returncode, s.stderr))
        lines = [json.loads(ln) for ln in s.stdout.splitlines()]
        per = {os.path.splitext(x["file"])[0]: x for x in lines if "file" in x}
        standard = next(x for x in lines if x.get("profile") == "standard")
        check(sorted(r for r in rows if r != "all") == feeds == sorted(per),
              "rows %s, feeds %s, score's files %s" % (sorted(rows), feeds, sorted(per)))
        total = [0, 0, 0, 0]
        for feed in feeds:
            x = per[feed]
            want = (x["windows"], x["windows_hit"], x["windows"] - x["windows_hit"],
                    x["false_alerts"])
            check(rows.get(feed, ())[:4] == want, "%s: the table says %s, tsmine score %s"
                  % (feed, rows.get(feed), want))
            total = [t + w for t, w in zip(total, want)]
        check(rows.get("all", ())[:4] == tuple(total), "all: %s, the sums %s" %
              (rows.get("all"), total))
        check("%.1f" % standard["score_as_published"] in score_line,
              "the NAB score line %r, tsmine score %.3f" % (score_line,
                                                            standard["score_as_published"]))

        # the pictures: valid PNGs with the windows and the events in them
        # where plot puts sample i (the same layout at every n: `tsmine plot -v` says)
        err = subprocess.run(
            [a.tsmine, "plot", "-m", "16", "--no-profile", "-k", "0", "--motifs", "0", "-v",
             "-o", os.path.join(work, "frame.png"), os.path.join(a.data, feeds[0] + ".csv")],
            capture_output=True, text=True).stderr
        m = re.search(r"sample i at x = ([\d.]+) \+ ([\d.]+) \* i / \d+; series y [\d.]+\.\."
                      r"(\d+)", err)
        if not check(m, "no frame in tsmine plot -v: %r" % err):
            return 1
        x0, width, y1 = float(m.group(1)), float(m.group(2)), int(m.group(3))
        checked = 0  # windows with a column clear of every band, over all the pictures
        for feed in feeds:
            pic = (rows.get(feed) or (None,) * 5)[4]
            if not check(pic == os.path.join(out, feed + ".png") and os.path.isfile(pic),
                         "%s: picture %r, want %s" % (feed, pic, os.path.join(out, feed +
                                                                              ".png"))):
                continue
            why = valid_png(pic)
            if not check(why is None, "%s: %s" % (pic, why)):
                continue
            _, _, px = plot_test.read_png(pic)
            with open(os.path.join(a.data, feed + ".csv")) as f:
                stamps = [ln.split(",")[0] for ln in f.read().splitlines()[1:] if ln.strip()]
            n = len(stamps)
            x_of = lambda i: x0 + width * i / (n - 1)
            marked = []  # the pixel columns of the events' and discords' bands
            ends = {x["event_start_seq"]: x["event_end_seq"] for x in alerts
                    if x["stream_id"] == "nab/" + feed and x["kind"] == "ANOMALY_END"}
            for x in alerts:
                if x["stream_id"] != "nab/" + feed:
                    continue
                if x["kind"] == "ANOMALY":
                    span = (x["event_start_seq"], ends.get(x["event_start_seq"], n) - 1)
                elif x["kind"] == "DISCORD":
                    span = (x["start_seq"], x["start_seq"] + x["length"] - 1)
                else:
                    continue
                marked.append((x_of(span[0]) - 2, x_of(span[1]) + 2))
            for start, end in labelled[feed + ".csv"]:
                xa, xb = x_of(stamps.index(start[:19])), x_of(stamps.index(end[:19]))
                free = [x for x in range(int(xa) + 2, int(xb) - 1)
                        if not any(lo <= x <= hi for lo, hi in marked)]
                if not free:
                    continue  # under an event's band all along: its tint is the blend
                # the bottom of the panel: below the trace (5% padding), where no label is
                col = [px[y][free[len(free) // 2]] for y in range(y1 - 15, y1 - 3)]
                check(all(g > r + 8 and g > b + 8 and g < 250 for r, g, b in col),
                      "%s: no window tint over %s..%s: %s" % (pic, start, end, col))
                checked += 1
            orange = sum(1 for row in px for r, g, b in row
                         if r > 240 and 100 < g < 160 and b < 40)
            events = sum(1 for x in alerts if x["kind"] == "ANOMALY" and
                         x["stream_id"] == "nab/" + feed)
            check((orange > 0) == (events > 0), "%s: %d orange pixels for %d events"
                  % (pic, orange, events))
        # (an event may cover a window whole: its tint is then the blend)
        check(checked > 0, "no window in %s clear of the events' bands to look at" % feeds)

        # refusals
        p = subprocess.run([a.script, "--tsmine", a.tsmine], capture_output=True, text=True)
        check(p.returncode == 64, "no arguments: exit %d" % p.returncode)
        p = subprocess.run([a.script, "--tsmine", a.tsmine, "--windows", windows, "--data",
                            work, "--out", out, path], capture_output=True, text=True)
        check(p.returncode == 1 and "tsmine" in p.stderr,
              "score failing (no data files): exit %d, %r" % (p.returncode, p.stderr))
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
