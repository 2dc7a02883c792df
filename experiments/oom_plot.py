#!/usr/bin/env python3
"""Gathers the points of experiments/oom_sweep.sh (one oom.py JSON per
memory limit) into one table and one SVG plot: the later epochs' median
time of every format against the memory limit, both axes logarithmic.
Standard library only."""
import argparse
import json
import math
import os

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def load(paths):
    points = []
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        factor = float(doc["limit_note"].split(" x ")[0])
        points.append((factor, doc))
    points.sort(key=lambda p: p[0])
    return points


def seconds(entry):
    s = entry["limited"]
    if not s["complete"]:
        return None
    return s["later_median_seconds"]


def table(points):
    first = points[0][1]
    labels = [e["label"] for e in first["formats"]]
    head = "| format | file MiB | " + " | ".join(
        f"{f:g}x: s/epoch (x TOC)" for f, _ in points) + " |"
    rule = "|---|---:|" + "---:|" * len(points)
    rows = [head, rule]
    for i, label in enumerate(labels):
        cells = []
        for _, doc in points:
            e = doc["formats"][i]
            toc = seconds(doc["formats"][0])
            s = seconds(e)
            if s is None:
                cells.append("killed" if e["limited"]["oom_killed"] else "failed")
            else:
                cells.append(f"{s:.2f} ({s / toc:.2f})" if toc else f"{s:.2f}")
        mib = first["formats"][i]["file_bytes"] / 2**20
        rows.append(f"| {label} | {mib:.1f} | " + " | ".join(cells) + " |")
    limits = ", ".join(f"{f:g}x = {doc['limit_bytes'] / 2**20:.1f} MiB" for f, doc in points)
    allowance = first["allowance_bytes"] / 2**20
    return "\n".join(rows) + (
        f"\n\nLimits (the factor times the TOC file plus {allowance:.1f} MiB, the training "
        f"process's own peak on the TOC file without a limit): {limits}. Reads throttled to "
        f"{first['read_mbps']:g} MB/s; {first['rows']:,} rows x {first['cols']} columns; "
        f"`tocpile train --epochs {first['epochs']} {first['train_args']}`; median of the "
        f"later epochs; {first['machine']}.\n")


def svg(points, path):
    w, h, left, right, top, bottom = 720, 440, 70, 150, 30, 50
    labels = [e["label"] for e in points[0][1]["formats"]]
    xs = [f for f, _ in points]
    ys = [seconds(doc["formats"][i]) for _, doc in points for i in range(len(labels))]
    ys = [y for y in ys if y]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))

    def px(x):
        return left + (math.log10(x) - lx0) / (lx1 - lx0 or 1) * (w - left - right)

    def py(y):
        return top + (ly1 - math.log10(y)) / (ly1 - ly0 or 1) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for e in range(ly0, ly1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    for x in xs:
        X = px(x)
        out.append(f'<line x1="{X:.1f}" y1="{top}" x2="{X:.1f}" y2="{h - bottom}" stroke="#eee"/>')
        out.append(f'<text x="{X:.1f}" y="{h - bottom + 16}" text-anchor="middle">{x:g}x</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">memory '
               'limit (x the TOC file, plus the process itself)</text>')
    out.append(f'<text x="16" y="{(top + h - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(top + h - bottom) / 2})">seconds per later epoch</text>')
    for i, label in enumerate(labels):
        color = COLORS[i % len(COLORS)]
        pts = [(px(f), py(seconds(doc["formats"][i]))) for f, doc in points
               if seconds(doc["formats"][i])]
        if pts:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
            for x, y in pts:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
        ly = top + 10 + 18 * i
        out.append(f'<line x1="{w - right + 15}" y1="{ly}" x2="{w - right + 40}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{w - right + 46}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("points", nargs="+", help="oom.py JSON files, one per memory limit")
    p.add_argument("--markdown", help="write the table here")
    p.add_argument("--svg", help="write the plot here")
    args = p.parse_args()
    points = load(args.points)
    text = table(points)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# Out-of-memory sweep\n\n" + text)
    if args.svg:
        svg(points, args.svg)


if __name__ == "__main__":
    main()
