#!/usr/bin/env python3
"""report_check.py - checks of `cosched report` output against its trace (tests/22-report.bats).

    report_check.py svg  PICTURE.svg TRACE   the SVG parses as XML; its rectangles say what the trace
                                             says: per step, each running job's cpus are rectangles of
                                             that job on those cpus, each live job's row has its state;
                                             no rectangle claims more; x is linear in time; each cpu
                                             idle 5 % of a step or more (cpu_idle) is hatched in that
                                             step by that share, nothing else is
    report_check.py html PAGE.html TRACE     parses as HTML (doctype, one inline <svg> that parses as XML,
                                             a table row per job), nothing external (no src, href,
                                             <script>, <link>, url(...) but #ids)
    report_check.py pixels SHOT.png PICTURE.svg [MIN]
                                             a browser's screenshot of PICTURE.svg: 3 px below the middle of
                                             the top of every rectangle at least 8x8 px big the pixel has its
                                             fill (within 24 per channel); MIN (default 4) such
                                             rectangles and as many distinct fills among them
    report_check.py pixels SHOT.png PICTURE.svg MIN MARGIN
                                             the same for a screenshot of the HTML page of PICTURE: the
                                             picture starts MARGIN px from the top left and is scaled down
                                             to the page's width when wider
    report_check.py colours SHOT.png COLOUR...
                                             each #rrggbb colour covers at least 40 pixels of the shot
    report_check.py nonblank SHOT.png        at least 4 colours cover 40 pixels or more each

Exit 1 with a message naming what differs.  PNG decoding is python's zlib
(8-bit RGB/RGBA/grey, non-interlaced: what Chromium writes); no PIL.
"""
import html.parser
import json
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"

from trace_check import cpulist  # noqa: E402  (same folder: one cpu-list reader)


def fail(msg):
    print("report_check: " + msg, file=sys.stderr)
    sys.exit(1)


def steps_of(trace):
    steps = []
    for n, line in enumerate(open(trace), 1):
        o = json.loads(line)
        if o.get("type") == "step":
            steps.append(o)
    if not steps:
        fail("no steps in " + trace)
    return steps


def rects(root, cls):
    out = []
    for r in root.iter(NS + "rect"):
        if r.get("class") == cls:
            out.append({"job": int(r.get("data-job")), "cpu": int(r.get("data-cpu", -1)),
                        "state": r.get("data-state"), "t0": float(r.get("data-t0")), "t1": float(r.get("data-t1")),
                        "x": float(r.get("x")), "w": float(r.get("width")), "fill": r.get("fill")})
    return out


def covering(rs, t0, t1, **want):
    eps = 1e-5
    return [r for r in rs if r["t0"] <= t0 + eps and r["t1"] >= t1 - eps and all(r[k] == v for k, v in want.items())]


def check_svg(picture, trace):
    try:
        root = ET.parse(picture).getroot()
    except ET.ParseError as e:
        fail("%s: not XML: %s" % (picture, e))
    if root.tag != NS + "svg":
        fail("%s: root is %s, want svg" % (picture, root.tag))
    steps = steps_of(trace)
    js, cs = rects(root, "js"), rects(root, "cs")
    if not js or not cs:
        fail("%s: %d job and %d cpu rectangles" % (picture, len(js), len(cs)))
    for s in steps:
        for j in s["jobs"]:
            row = covering(js, s["start"], s["end"], job=j["id"])
            if len(row) != 1:
                fail("step %d: job %d: %d job-row rectangles cover %.3f-%.3f, want 1" %
                     (s["seq"], j["id"], len(row), s["start"], s["end"]))
            want = {"frozen": ("frozen",), "stuck": ("stuck",), "run": ("running", "folded", "characterizing")}
            if row[0]["state"] not in want[j["state"]]:
                fail("step %d: job %d is %s in the trace, %s in the picture" %
                     (s["seq"], j["id"], j["state"], row[0]["state"]))
            if j["state"] != "run":
                continue
            for c in cpulist(j["cpus"]):
                if len(covering(cs, s["start"], s["end"], job=j["id"], cpu=c)) != 1:
                    fail("step %d: job %d runs on cpu %d in the trace; no single cpu rectangle shows it" %
                         (s["seq"], j["id"], c))
    # nothing claimed that the trace does not say: every step inside a rectangle agrees with it
    for r in cs:
        inside = [s for s in steps if s["start"] >= r["t0"] - 1e-5 and s["end"] <= r["t1"] + 1e-5]
        if not inside:
            fail("cpu rectangle %s covers no step" % r)
        for s in inside:
            on = [j for j in s["jobs"] if j["id"] == r["job"] and j["state"] == "run" and r["cpu"] in cpulist(j["cpus"])]
            if not on:
                fail("cpu rectangle %s: step %d does not run job %d on cpu %d" % (r, s["seq"], r["job"], r["cpu"]))
    for r in js:
        inside = [s for s in steps if s["start"] >= r["t0"] - 1e-5 and s["end"] <= r["t1"] + 1e-5]
        if not inside or any(r["job"] not in [j["id"] for j in s["jobs"]] for s in inside):
            fail("job rectangle %s covers a step without its job" % r)
    # x is linear in t: fit on the extremes, every rectangle within a pixel
    allr = js + cs
    a, b = min(allr, key=lambda r: r["t0"]), max(allr, key=lambda r: r["t1"])
    scale = (b["x"] + b["w"] - a["x"]) / (b["t1"] - a["t0"])
    for r in allr:
        if abs(a["x"] + (r["t0"] - a["t0"]) * scale - r["x"]) > 1.0:
            fail("rectangle %s is not where its start time puts it" % r)
    # idle cpus: one hatch per (step, cpu) idle >= 5 % of the step, its data-idle the share
    hatch = {}
    for r in root.iter(NS + "rect"):
        if r.get("class") == "ci":
            k = (int(r.get("data-step")), int(r.get("data-cpu")))
            if k in hatch:
                fail("step %d, cpu %d: two idle hatches" % k)
            hatch[k] = float(r.get("data-idle"))
    want = {}
    for s in steps:
        d = s["end"] - s["start"]
        for c, sec in s.get("cpu_idle", []):
            if d > 0 and min(1.0, sec / d) >= 0.05:
                want[s["seq"], c] = min(1.0, sec / d)
    if set(hatch) != set(want):
        fail("idle hatches for (step, cpu) %s, the trace says %s" % (sorted(hatch), sorted(want)))
    for k, v in want.items():
        if abs(hatch[k] - v) > 0.001:
            fail("step %d, cpu %d: hatched %.3f idle, the trace says %.3f" % (k[0], k[1], hatch[k], v))
    print("%d steps, %d job and %d cpu rectangles, %d idle hatches agree" % (len(steps), len(js), len(cs), len(hatch)))


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.external, self.doctype, self.rows = [], [], None, 0

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.rows += 1
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.external.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href") or (v and "url(" in v and "url(#" not in v):
                self.external.append("%s %s=%s" % (tag, k, v))


def check_html(page, trace):
    text = open(page, encoding="utf-8").read()
    p = Page()
    p.feed(text)
    p.close()
    if not p.doctype or p.doctype.lower() != "doctype html":
        fail("%s: no <!DOCTYPE html> (got %r)" % (page, p.doctype))
    if p.external:
        fail("%s: refers to outside resources: %s" % (page, p.external))
    if "url(" in text.replace("url(#", ""):
        fail("%s: a url(...) to outside" % page)
    if p.tags.count("svg") != 1:
        fail("%s: %d <svg>, want 1" % (page, p.tags.count("svg")))
    svg = text[text.index("<svg"):text.index("</svg>") + 6]
    try:
        ET.fromstring(svg)
    except ET.ParseError as e:
        fail("%s: the inline SVG is not XML: %s" % (page, e))
    jobs = {j["id"] for s in steps_of(trace) for j in s["jobs"]}
    if p.rows != len(jobs) + 1:
        fail("%s: %d table rows, want a header and one per job (%d)" % (page, p.rows, len(jobs)))
    print("%s: HTML with one inline SVG and %d job rows, nothing external" % (page, len(jobs)))


def png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s: not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace or ctype not in (0, 2, 6):
                fail("%s: PNG kind not decoded here (depth %d, colour type %d, interlace %d)" %
                     (path, depth, ctype, interlace))
            bpp = {0: 1, 2: 3, 6: 4}[ctype]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for y in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append(line)
        prev = line

    def pixel(x, y):
        r = rows[y]
        if bpp == 1:
            return (r[x], r[x], r[x])
        return tuple(r[x * bpp:x * bpp + 3])
    return w, h, pixel


def rgb(hexcolour):
    return tuple(int(hexcolour[i:i + 2], 16) for i in (1, 3, 5))


def close(p, q, tol=24):
    return all(abs(a - b) <= tol for a, b in zip(p, q))


def check_pixels(shot, picture, minimum, margin=None):
    """Each job and cpu rectangle of PICTURE has its fill in SHOT where the SVG
    puts it; with MARGIN, SHOT is an HTML page whose picture starts MARGIN px
    from its top left corner, scaled down to the page's width if wider."""
    w, h, pixel = png(shot)
    root = ET.parse(picture).getroot()
    scale, off = 1.0, 0.0
    if margin is not None:
        off = float(margin)
        scale = min(1.0, (w - 2 * off) / float(root.get("width")))
    checked, fills = 0, set()
    for r in root.iter(NS + "rect"):
        if r.get("class") not in ("js", "cs"):
            continue
        x, y, rw, rh = (float(r.get(k)) for k in ("x", "y", "width", "height"))
        if rw * scale < 8 or rh * scale < 8:
            continue
        # the middle of its top edge, 3 px in: names drawn inside start lower
        cx, cy = int(off + (x + rw / 2) * scale), int(off + (y + 3) * scale + 0.5)
        if cx >= w or cy >= h:
            fail("%s: rectangle at (%d,%d) is outside the %dx%d screenshot" % (shot, cx, cy, w, h))
        got = pixel(cx, cy)
        if not close(got, rgb(r.get("fill"))):
            fail("%s: pixel (%d,%d) is %s, want the fill %s of %s" %
                 (shot, cx, cy, "#%02x%02x%02x" % got, r.get("fill"), r.find(NS + "title").text))
        checked += 1
        fills.add(r.get("fill"))
    if checked < minimum or len(fills) < minimum:
        fail("%s: %d rectangles with %d fills checked, want at least %d" % (shot, checked, len(fills), minimum))
    print("%s: %d rectangles, %d colours, drawn where the SVG puts them" % (shot, checked, len(fills)))


def histogram(shot):
    w, h, pixel = png(shot)
    count = {}
    for y in range(0, h):
        for x in range(0, w):
            p = pixel(x, y)
            count[p] = count.get(p, 0) + 1
    return count


def check_colours(shot, colours):
    count = histogram(shot)
    for c in colours:
        n = sum(k for p, k in count.items() if close(p, rgb(c), 6))
        if n < 40:
            fail("%s: colour %s covers %d pixels, want at least 40" % (shot, c, n))
    print("%s: each of %s is there" % (shot, " ".join(colours)))


def check_nonblank(shot):
    count = histogram(shot)
    big = [p for p, k in count.items() if k >= 40]
    if len(big) < 4:
        fail("%s: %d colours cover 40 pixels or more, want at least 4 (blank page?)" % (shot, len(big)))
    print("%s: %d colours" % (shot, len(big)))


def main():
    what = sys.argv[1]
    if what == "svg":
        check_svg(sys.argv[2], sys.argv[3])
    elif what == "html":
        check_html(sys.argv[2], sys.argv[3])
    elif what == "pixels":
        check_pixels(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 4,
                     sys.argv[5] if len(sys.argv) > 5 else None)
    elif what == "colours":
        check_colours(sys.argv[2], sys.argv[3:])
    elif what == "nonblank":
        check_nonblank(sys.argv[2])
    else:
        fail("unknown check " + what)


if __name__ == "__main__":
    main()
