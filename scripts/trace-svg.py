#!/usr/bin/env python3
"""trace-svg.py TRACE.json [MICROSECONDS [START_US]] > out.svg

Draw a window of an mqs trace (MQS_TRACE, docs/tracing.md) as SVG, for
looking at a trace where no browser with Perfetto is at hand: one row per
worker with its runs (a colour per task, the task's name inside when it
fits), `parked` spans in grey, and an arrow from each wake-up to the run
it caused.  The window is MICROSECONDS long (default 50), from START_US
(default: the first wake-up in the trace).  Python's standard library
only.
"""
import json
import sys
from html import escape


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    span = float(sys.argv[2]) if len(sys.argv) > 2 else 50.0
    ev = doc["traceEvents"]
    names = {}
    workers = {}
    for e in ev:
        if e["ph"] == "M" and e["name"] == "thread_name" and "tid" in e:
            if e["pid"] == 2:
                names[e["tid"]] = e["args"]["name"]
            else:
                workers[e["tid"]] = e["args"]["name"]
    wakes = [e for e in ev if e["ph"] == "i" and e["name"].startswith("wake")]
    if len(sys.argv) > 3:
        t0 = float(sys.argv[3])
    elif wakes:
        t0 = min(e["ts"] for e in wakes)
    else:
        t0 = 0.0
    t1 = t0 + span
    rows = sorted(workers)
    width, left, row_h, top = 1000, 110, 34, 30
    scale = (width - left - 10) / span

    def x(ts):
        return left + (ts - t0) * scale

    palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"]
    colour = {}

    def task_colour(task):
        if task not in colour:
            colour[task] = palette[len(colour) % len(palette)]
        return colour[task]

    out = []
    height = top + row_h * len(rows) + 50
    out.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" '
               'height="%d" font-family="sans-serif" font-size="11">'
               % (width, height))
    out.append('<rect width="100%" height="100%" fill="white"/>')
    out.append('<defs><marker id="a" markerWidth="6" markerHeight="6" '
               'refX="5" refY="3" orient="auto"><path d="M0,0 L6,3 L0,6 z" '
               'fill="black"/></marker></defs>')
    title = "%s, policy %s: %.0f us from %.1f us" % (
        sys.argv[1].split("/")[-1], doc.get("otherData", {}).get("policy"),
        span, t0)
    out.append('<text x="4" y="16">%s</text>' % escape(title))
    y_of = {}
    for i, tid in enumerate(rows):
        y = top + i * row_h
        y_of[tid] = y
        out.append('<text x="4" y="%d">%s</text>'
                   % (y + row_h / 2 + 4, escape(workers[tid])))
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#ddd"/>'
                   % (left, width - 10, y + row_h - 2, y + row_h - 2))
    starts = {}
    for e in ev:
        if e["ph"] != "X" or e["pid"] != 1 or e["tid"] not in y_of:
            continue
        a, b = e["ts"], e["ts"] + e["dur"]
        if b < t0 or a > t1:
            continue
        a, b = max(a, t0), min(b, t1)
        y = y_of[e["tid"]] + 4
        if e["name"] == "parked":
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                       'fill="#ccc"/>' % (x(a), y + 8, max(x(b) - x(a), 0.5),
                                          row_h - 22))
            continue
        task = e["args"]["task"]
        starts[(e["tid"], e["ts"])] = y
        w = max(x(b) - x(a), 0.5)
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s"><title>%s (t%d) %.3f us, ends: %s</title>'
                   '</rect>' % (x(a), y, w, row_h - 10, task_colour(task),
                                escape(names.get(task, "t%d" % task)), task,
                                e["dur"], e["args"].get("end")))
        label = names.get(task, "t%d" % task)
        if w > 7 * len(label):
            out.append('<text x="%.1f" y="%d" fill="white">%s</text>'
                       % (x(a) + 2, y + row_h / 2, escape(label)))
    flows = {}
    for e in ev:
        if e["ph"] in ("s", "f") and e["tid"] in y_of:
            flows.setdefault(e["id"], {})[e["ph"]] = e
    for fl in flows.values():
        if "s" not in fl or "f" not in fl:
            continue
        s, f = fl["s"], fl["f"]
        if s["ts"] < t0 or f["ts"] > t1:
            continue
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                   'stroke="black" stroke-width="0.8" '
                   'marker-end="url(#a)"/>'
                   % (x(s["ts"]), y_of[s["tid"]] + 2, x(f["ts"]),
                      y_of[f["tid"]] + 4))
    y = top + row_h * len(rows) + 14
    for k in range(0, 6):
        ts = t0 + span * k / 5
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.1f us'
                   '</text>' % (x(ts), y, ts))
    lx = left
    for task, c in list(colour.items())[:10]:
        label = names.get(task, "t%d" % task)
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>'
                   % (lx, y + 10, c, lx + 13, y + 19, escape(label)))
        lx += 20 + 7 * len(label)
    out.append('</svg>')
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
