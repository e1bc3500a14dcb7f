#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""plot_test.py - `tsmine plot` renders known cases with their marks where they belong.

Each case builds a series with a known answer (a planted discord, a planted motif pair,
hand-written detect alerts, NAB's labelled windows of nyc_taxi with --windows), draws
it, and finds the marks in the picture: in the SVG, the translucent bands (paths with
fill-opacity 0.22; 0.16 for the windows) of each colour, whose x range must be that of
the marked samples to 0.01 px; in the PNG, the band's tint in the pixel column through
a mark's middle and no tint in a column far from every mark. Where a
sample lies comes from `tsmine plot -v` ("sample i at x = X0 + W * i / (n-1)"). The
marks computed by plot itself must be those `tsmine discord` and `tsmine motif` print.
Then the refusals: each bad input exits with its status and a message naming the place.

Python standard library only (the PNG is decoded here with zlib). About 2 s.
Usage: plot_test.py --tsmine PATH [--data DIR]   (DIR: tests/data, for nyc_taxi.csv and
nab_windows.json)
"""
import argparse
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

BAND_OPACITY = "0.22"
# The marks' colours in plot_draw.c, in percent as cairo writes them into an SVG.
COLOURS = {"discord": (84, 15, 16), "motif1": (12, 47, 71), "motif2": (17, 63, 17),
           "event": (100, 50, 5), "window": (20, 62, 30)}
WINDOW_OPACITY = "0.16"  # the labelled windows' bands (--windows), beneath the marks

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    return cond


def run(tsmine, *args, stdin=None):
    p = subprocess.run([tsmine, *args], input=stdin, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def write_series(path, values):
    with open(path, "w") as f:
        f.write("".join("%.17g\n" % v for v in values))


def frame_of(stderr):
    """x0, width, n-1 and the series panel's y range from `tsmine plot -v`."""
    m = re.search(r"sample i at x = ([\d.]+) \+ ([\d.]+) \* i / (\d+); series y ([\d.]+)\.\."
                  r"([\d.]+), profile y ([\d.]+)\.\.([\d.]+)", stderr)
    assert m, "no frame in: " + stderr
    x0, w, last, sy0, sy1, py0, py1 = (float(g) for g in m.groups())
    return {"x": lambda i: x0 + w * i / last, "series": (sy0, sy1), "profile": (py0, py1)}


def colour_name(style):
    m = re.search(r"fill:rgb\(([\d.]+)%,([\d.]+)%,([\d.]+)%\)", style)
    if not m:
        return None
    rgb = tuple(float(g) for g in m.groups())
    best = min(COLOURS, key=lambda k: sum((a - b) ** 2 for a, b in zip(COLOURS[k], rgb)))
    return best if sum((a - b) ** 2 for a, b in zip(COLOURS[best], rgb)) < 30 else None


def svg_bands(path, opacity=BAND_OPACITY):
    """The bands of an SVG: (colour, x0, x1, y0, y1) of each path of that fill-opacity
    (0.22: the marks; WINDOW_OPACITY: the labelled windows)."""
    bands = []
    for el in ET.parse(path).iter("{http://www.w3.org/2000/svg}path"):
        style = el.get("style", "")
        if "fill-opacity:" + opacity + ";" not in style:
            continue
        nums = [float(v) for v in re.findall(r"-?[\d.]+", el.get("d", ""))]
        xs, ys = nums[0::2], nums[1::2]
        bands.append((colour_name(style), min(xs), max(xs), min(ys), max(ys)))
    return bands


def expect_bands(path, fr, want, label):
    """want: (colour, first sample, last sample) of every mark; each has one band in the
    series panel and one in the profile panel (if drawn), at exactly its samples' x."""
    bands = svg_bands(path)
    panels = ("series", "profile") if fr["profile"][1] > 0 else ("series",)
    check(len(bands) == len(panels) * len(want),
          "%s: %d bands, want %d: %s" % (label, len(bands), len(panels) * len(want), bands))
    for colour, first, last in want:
        x0, x1 = fr["x"](first), fr["x"](last)
        if x1 - x0 < 2:
            x0, x1 = x0 - 1, x1 + 1
        for panel in panels:
            y0, y1 = fr[panel]
            hit = [b for b in bands if b[0] == colour and abs(b[1] - x0) < 0.01 and
                   abs(b[2] - x1) < 0.01 and b[3] >= y0 - 0.01 and b[4] <= y1 + 0.01]
            check(len(hit) == 1, "%s: no %s band over samples %d..%d in the %s panel "
                  "(x %.2f..%.2f); bands: %s" % (label, colour, first, last, panel, x0, x1,
                                                 bands))


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def reddish(px):
    r, g, b = px
    return r > 180 and r - g > 25 and abs(g - b) < 30


def case_discord(tsmine, work):
    """A sine of period 50 with a flat-topped bump planted at 1200: the top discord."""
    rng = random.Random(7)
    v = [math.sin(2 * math.pi * i / 50) + 0.05 * rng.gauss(0, 1) for i in range(2000)]
    for i in range(1200, 1225):
        v[i] = 1.5
    path = os.path.join(work, "discord.csv")
    write_series(path, v)
    rc, out, err = run(tsmine, "discord", "-m", "50", "-k", "2", path)
    found = [json.loads(line) for line in out.splitlines()]
    if not check(rc == 0 and len(found) == 2 and 1150 <= found[0]["index"] <= 1225,
                 "discord: the planted bump is not the top discord: %s %s" % (out, err)):
        return
    want = [("discord", d["index"], d["index"] + 49) for d in found]
    for ext in ("svg", "png"):
        pic = os.path.join(work, "discord." + ext)
        rc, out, err = run(tsmine, "plot", "-m", "50", "-k", "2", "--motifs", "0", "-v",
                           "-o", pic, path)
        if not check(rc == 0, "discord: plot %s exited %d: %s" % (ext, rc, err)):
            return
        fr = frame_of(err)
        if ext == "svg":
            expect_bands(pic, fr, want, "discord")
            # The same discords given as `tsmine discord` printed them.
            rc, _, err = run(tsmine, "plot", "-m", "50", "--from", "-", "-v", "-o",
                             pic + ".from.svg", path,
                             stdin="".join(json.dumps(d) + "\n" for d in found))
            check(rc == 0, "discord --from: exited %d: %s" % (rc, err))
            expect_bands(pic + ".from.svg", fr, want, "discord --from")
            # A left profile given (rows of `tsmine profile`): drawn, nothing marked.
            rc, prof, err = run(tsmine, "profile", "-m", "50", "--left", path)
            rc2, _, err2 = run(tsmine, "plot", "-m", "50", "--left", "--from", "-", "-v", "-o",
                               pic + ".profile.svg", path, stdin=prof)
            check(rc == 0 and rc2 == 0 and "profile y 0..0" not in err2 and
                  svg_bands(pic + ".profile.svg") == [],
                  "profile --from: exited %d/%d: %s%s" % (rc, rc2, err, err2))
            continue
        w, h, rows = read_png(pic)
        check((w, h) == (1200, 600), "discord: PNG is %dx%d, not 1200x600" % (w, h))
        y0, y1 = (int(round(y)) for y in fr["series"])
        xm = int(round(fr["x"](found[0]["index"] + 25)))
        tinted = sum(reddish(rows[y][xm]) for y in range(y0 + 2, y1 - 2))
        check(tinted > 0.6 * (y1 - y0 - 4), "discord: PNG column %d of the top discord "
              "is red in %d of %d rows" % (xm, tinted, y1 - y0 - 4))
        xf = int(round(fr["x"](300)))
        stray = sum(reddish(rows[y][xf]) for y in range(y0 + 2, y1 - 2))
        check(stray == 0, "discord: PNG column %d, far from any mark, has %d red pixels"
              % (xf, stray))


def case_motif(tsmine, work):
    """A random walk with one shape planted twice, at 500 and 2200: the top motif pair."""
    rng = random.Random(11)
    v, x = [], 0.0
    for _ in range(3000):
        x += rng.gauss(0, 1)
        v.append(x)
    shape = [10 * math.sin(i / 5.0) + 0.3 * i for i in range(64)]
    for start in (500, 2200):
        v[start:start + 64] = [s + v[start - 1] for s in shape]
    path = os.path.join(work, "motif.csv")
    write_series(path, v)
    rc, out, err = run(tsmine, "motif", "-m", "64", "-k", "2", path)
    pairs = [json.loads(line) for line in out.splitlines()]
    # The sample before each copy is the same offset too: the pair may start there.
    if not check(rc == 0 and len(pairs) == 2 and pairs[0]["b"] - pairs[0]["a"] == 1700 and
                 pairs[0]["a"] in (499, 500) and pairs[0]["distance"] < 1e-6,
                 "motif: the planted pair is not the top motif: %s %s" % (out, err)):
        return
    want = [("motif%d" % p["rank"], i, i + 63) for p in pairs for i in (p["a"], p["b"])]
    pic = os.path.join(work, "motif.svg")
    rc, _, err = run(tsmine, "plot", "-m", "64", "-k", "0", "--motifs", "2", "-v", "-o", pic,
                     path)
    if check(rc == 0, "motif: plot exited %d: %s" % (rc, err)):
        expect_bands(pic, frame_of(err), want, "motif")
    rc, _, err = run(tsmine, "plot", "-m", "64", "-k", "0", "--motifs", "2", "--no-profile",
                     "-v", "-o", pic, path)
    if check(rc == 0, "motif --no-profile: plot exited %d: %s" % (rc, err)):
        fr = frame_of(err)
        check(fr["profile"] == (0, 0), "motif --no-profile: a profile panel: %s" % err)
        expect_bands(pic, fr, want, "motif --no-profile")


def alert(kind, start, length, **more):
    a = {"alert_id": 1, "stream_id": "events", "kind": kind, "start_seq": start,
         "start_timestamp_ns": start * 10 ** 9, "length": length, "distance": 2.5,
         "neighbor_seq": 0, "threshold": 0.997, "score": 0.999, "detected_seq": start + length}
    a.update(more)
    return json.dumps(a) + "\n"


def case_events(tsmine, work):
    """Hand-written detect alerts: an event opened and closed, one still open at the end,
    a DISCORD, a MOTIF pair and a GAP (not drawn)."""
    v = [math.sin(i / 8.0) for i in range(2000)]
    path = os.path.join(work, "events.csv")
    write_series(path, v)
    alerts = (alert("ANOMALY", 300, 40, event_start_seq=300, event_end_seq=340) +
              alert("DISCORD", 900, 40) +
              alert("ANOMALY_END", 310, 40, event_start_seq=300, event_end_seq=420) +
              alert("GAP", 1000, 5) +
              alert("MOTIF", 100, 40, neighbor_seq=1700) +
              alert("ANOMALY", 1500, 40, event_start_seq=1500, event_end_seq=1540))
    res = os.path.join(work, "events.json")
    with open(res, "w") as f:
        f.write(alerts)
    pic = os.path.join(work, "events.svg")
    rc, _, err = run(tsmine, "plot", "-m", "40", "--from", res, "-v", "-o", pic, path)
    if check(rc == 0, "events: plot exited %d: %s" % (rc, err)):
        expect_bands(pic, frame_of(err), [("event", 300, 419), ("event", 1500, 1999),
                                          ("discord", 900, 939), ("motif1", 100, 139),
                                          ("motif1", 1700, 1739)], "events")


def case_detect(tsmine, work, data):
    """The real `tsmine detect` on nyc_taxi: one event band per ANOMALY_END (with its
    extent) and per ANOMALY never closed."""
    rc, out, _ = run(tsmine, "--help")
    taxi = os.path.join(data, "nyc_taxi.csv")
    if " detect " not in out or not os.path.exists(taxi):
        print("skip: no tsmine detect in this build, or no nyc_taxi.csv")
        return
    rc, alerts, err = run(tsmine, "detect", taxi)
    if not check(rc == 0, "detect: exited %d: %s" % (rc, err)):
        return
    rows = [json.loads(line) for line in alerts.splitlines()]
    ends = {a["event_start_seq"]: a["event_end_seq"] for a in rows if a["kind"] == "ANOMALY_END"}
    want = [("event", s, e - 1) for s, e in ends.items()]
    want += [("event", a["event_start_seq"], 10319) for a in rows
             if a["kind"] == "ANOMALY" and a["event_start_seq"] not in ends]
    want += [("discord", a["start_seq"], a["start_seq"] + a["length"] - 1) for a in rows
             if a["kind"] == "DISCORD"]
    pic = os.path.join(work, "detect.svg")
    motifs = sum(a["kind"] == "MOTIF" for a in rows)
    rc, _, err = run(tsmine, "plot", "-m", "48", "--from", "-", "-v", "-o", pic, taxi,
                     stdin=alerts)
    if check(rc == 0, "detect: plot exited %d: %s" % (rc, err)):
        bands = svg_bands(pic)
        check(len(bands) == 2 * (len(want) + 2 * motifs),
              "detect: %d bands for %d events and discords, %d motif pairs"
              % (len(bands), len(want), motifs))
        fr = frame_of(err)
        for colour, first, last in want:
            check(any(b[0] == colour and abs(b[1] - fr["x"](first)) < 0.01 and
                      abs(b[2] - fr["x"](last)) < 0.01 for b in bands),
                  "detect: no %s band over %d..%d" % (colour, first, last))


def case_windows(tsmine, work, data):
    """--windows: NAB's labelled windows of nyc_taxi (tests/data/nab_windows.json, by the
    file's name) shaded green over exactly their rows, beneath the marks of --from and
    with a legend entry; then the windows file's refusals."""
    taxi = os.path.join(data, "nyc_taxi.csv")
    windows = os.path.join(data, "nab_windows.json")
    with open(taxi) as f:
        rows = [ln.split(",")[0] for ln in f.read().splitlines()[1:] if ln.strip()]
    with open(windows) as f:
        labelled = json.load(f)["nyc_taxi.csv"]
    want = [("window", rows.index(a[:19]), rows.index(b[:19])) for a, b in labelled]
    res = os.path.join(work, "taxi.json")
    with open(res, "w") as f:
        f.write(alert("DISCORD", 5000, 48))
    pic = os.path.join(work, "windows.svg")
    rc, _, err = run(tsmine, "plot", "-m", "48", "--no-profile", "--from", res, "--windows",
                     windows, "-v", "-o", pic, taxi)
    if not check(rc == 0, "windows: plot exited %d: %s" % (rc, err)):
        return
    fr = frame_of(err)
    got = svg_bands(pic, WINDOW_OPACITY)
    check(len(got) == len(want), "windows: %d window bands, want %d" % (len(got), len(want)))
    for colour, first, last in want:
        check(any(b[0] == colour and abs(b[1] - fr["x"](first)) < 0.01 and
                  abs(b[2] - fr["x"](last)) < 0.01 for b in got),
              "windows: no window band over rows %d..%d: %s" % (first, last, got))
    expect_bands(pic, fr, [("discord", 5000, 5047)], "windows: the marks")
    png = os.path.join(work, "windows.png")
    rc, _, err = run(tsmine, "plot", "-m", "48", "--no-profile", "--windows", windows,
                     "-k", "0", "--motifs", "0", "-v", "-o", png, taxi)
    if check(rc == 0, "windows: plot to PNG exited %d: %s" % (rc, err)):
        fr, (_, _, px) = frame_of(err), read_png(png)
        y0 = int(fr["series"][0])  # the top of the panel: above the trace (5% padding)
        for _, first, last in want:  # the tint in the column through the window's middle
            col = [px[y][int(fr["x"]((first + last) / 2))] for y in range(y0 + 3, y0 + 15)]
            check(all(g > r + 8 and g > b + 8 and g < 250 for r, g, b in col),
                  "windows: no green tint in the PNG over rows %d..%d: %s" % (first, last, col))
        x = int(fr["x"](100))  # and none where no window is
        check(all(r == g == b for r, g, b in (px[y][x] for y in range(y0 + 3, y0 + 15))),
              "windows: a tint in the PNG outside every window")
    # refusals: a file the windows do not name, a bound that is no row, no timestamps
    other = os.path.join(work, "other.csv")
    with open(other, "w") as f:
        f.write("timestamp,value\n" + "".join("2014-01-01 00:%02d:00,%d\n" % (i, i % 7)
                                                for i in range(60)))
    bounds = os.path.join(work, "bounds.json")
    with open(bounds, "w") as f:
        json.dump({"x/other.csv": [["2014-01-01 00:10:00", "2014-01-01 00:10:30"]]}, f)
    bare = os.path.join(work, "bare.csv")
    write_series(bare, [math.sin(i / 3.0) for i in range(60)])
    with open(os.path.join(work, "bare.json"), "w") as f:
        json.dump({"bare.csv": [["2014-01-01 00:10:00", "2014-01-01 00:20:00"]]}, f)
    for args, status, text in [
            (["--windows", windows, other], 65, "no entry named after other"),
            (["--windows", bounds, other], 65, "window bound '2014-01-01 00:10:30'"),
            (["--windows", os.path.join(work, "bare.json"), bare], 65, "no timestamp column"),
            (["--windows", os.path.join(work, "none.json"), other], 66, "none.json")]:
        rc, _, err = run(tsmine, "plot", "-m", "8", "--no-profile", "-o", png, *args)
        check(rc == status and text in err and err.count("\n") == 1,
              "windows: plot %s: exit %d (want %d), %r (want %r)" % (" ".join(args), rc, status,
                                                                    err, text))


def case_input(tsmine, work):
    """The text input options and -m auto, as the batch commands take them: a ';' CSV
    with a label column and decimal commas, the series of case_discord in its third."""
    rng = random.Random(7)
    v = [math.sin(2 * math.pi * i / 50) + 0.05 * rng.gauss(0, 1) for i in range(2000)]
    for i in range(1200, 1225):
        v[i] = 1.5
    path = os.path.join(work, "columns.csv")
    with open(path, "w") as f:
        f.write("timestamp;label;value\n")
        for i, x in enumerate(v):
            f.write("2024-01-01 %02d:%02d;%d;%s\n" % (i // 60 % 24, i % 60, int(i >= 1200),
                                                      repr(x).replace(".", ",")))
    opts = ["-m", "auto", "--column", "value", "--decimal-comma", "-k", "1"]
    rc, out, err = run(tsmine, "discord", *opts, path)
    if not check(rc == 0 and "m = 50 (period 50)" in err, "input: discord %s exited %d: %s"
                 % (" ".join(opts), rc, err)):
        return
    d = json.loads(out.splitlines()[0])
    pic = os.path.join(work, "columns.svg")
    rc, _, err = run(tsmine, "plot", *opts, "--motifs", "0", "-v", "-o", pic, path)
    if check(rc == 0 and "m = 50 (period 50)" in err,
             "input: plot %s exited %d: %s" % (" ".join(opts), rc, err)):
        expect_bands(pic, frame_of(err), [("discord", d["index"], d["index"] + 49)], "input")
    for args, status, text in [
            (["-m", "50", path], 65, "give --column"),
            (["-m", "50", "--column", "value", path], 65, "decimal comma"),
            (["-m", "50", "--column", "value", "--decimal-comma", "--delimiter", ",", path],
             64, "--decimal-comma needs a delimiter"),
            (["-m", "auto", "--column", "value", "--decimal-comma", "--delimiter", ";",
              "--input-format", "csv", path], 0, "m = 50")]:
        rc, _, err = run(tsmine, "plot", *args[:-1], "-o", pic, args[-1])
        check(rc == status and text in err, "input: plot %s: exit %d (want %d), %r (want %r)"
              % (" ".join(args), rc, status, err, text))


def case_refusals(tsmine, work):
    """Bad arguments and bad results: the exit status and the message's place."""
    path = os.path.join(work, "small.csv")
    write_series(path, [math.sin(i / 3.0) for i in range(200)])
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"rank":1,"index":10,"distance":1,"neighbor":50}\n{"rank":2,"index":\n')
    far = os.path.join(work, "far.json")
    with open(far, "w") as f:
        f.write('{"rank":1,"index":190,"distance":1,"neighbor":5}\n')
    two = os.path.join(work, "two.json")
    with open(two, "w") as f:
        f.write(alert("DISCORD", 10, 20) + alert("DISCORD", 50, 20).replace('"events"', '"x"'))
    out = os.path.join(work, "x.png")
    cases = [
        (["-m", "20", "-o", out], 64, "missing FILE"),
        (["-m", "20", path], 64, "missing -o"),
        (["-o", out, path], 64, "missing -m"),
        (["-m", "20", "-o", os.path.join(work, "x.jpg"), path], 64, ".png or .svg"),
        (["-m", "20", "-W", "10", "-o", out, path], 64, "--width"),
        (["-m", "300", "-o", out, path], 64, "300"),
        (["-m", "20", "-o", out, os.path.join(work, "none.csv")], 66, "none.csv"),
        (["-m", "20", "--from", bad, "-o", out, path], 65, "bad.json:2"),
        (["-m", "20", "--from", far, "-o", out, path], 65, "far.json:1: index = 190"),
        (["-m", "20", "--from", two, "-o", out, path], 65, "two.json:2: alerts of a second"),
        (["-m", "20", "-o", os.path.join(work, "no", "dir", "x.svg"), path], 73, "x.svg"),
    ]
    for args, status, text in cases:
        rc, _, err = run(tsmine, "plot", *args)
        check(rc == status and text in err and err.startswith("tsmine: ") and
              err.count("\n") == 1,
              "plot %s: exit %d (want %d), message %r (want one line with %r)"
              % (" ".join(args), rc, status, err, text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsmine", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsmine-plot.") as work:
        case_discord(a.tsmine, work)
        case_motif(a.tsmine, work)
        case_events(a.tsmine, work)
        case_detect(a.tsmine, work, a.data)
        case_windows(a.tsmine, work, a.data)
        case_input(a.tsmine, work)
        case_refusals(a.tsmine, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
