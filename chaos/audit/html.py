"""report.html: one self-contained page (inline SVG, no scripts) with the verdict, throughput and
latency over the run's time with every fault window shaded, and the violations."""

from __future__ import annotations

import html
import json

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 900, 220, 60, 30, 10
COLORS = {
    "send": "#1f77b4",
    "poll": "#2ca02c",
    "commit": "#9467bd",
    "assign": "#8c564b",
    "subscribe": "#8c564b",
}
FAULT_FILL = "#d62728"


def _chart(title: str, unit: str, series: dict, span_s: float, faults, t0: int) -> str:
    ymax = max((y for pts in series.values() for _, y in pts), default=1) or 1
    w, h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP

    def x(t):
        return LEFT + w * min(max(t / span_s, 0), 1)

    def y(v):
        return TOP + h - h * v / ymax

    parts = [
        f'<svg width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{html.escape(title)}">'
    ]
    for fw in faults:
        start = (fw.start - t0) / 1e9
        end = span_s if fw.end is None else (fw.end - t0) / 1e9
        label = html.escape(f"{fw.nemesis} {','.join(map(str, fw.targets))}")
        parts.append(
            f'<rect class="fault" x="{x(start):.1f}" y="{TOP}" width="{max(x(end) - x(start), 1):.1f}" '
            f'height="{h}" fill="{FAULT_FILL}" fill-opacity="0.15"><title>{label}</title></rect>'
        )
        parts.append(
            f'<text x="{x(start) + 2:.1f}" y="{TOP + 12}" font-size="10" fill="{FAULT_FILL}">{label}</text>'
        )
    parts.append(f'<line x1="{LEFT}" y1="{TOP + h}" x2="{LEFT + w}" y2="{TOP + h}" stroke="#444"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + h}" stroke="#444"/>')
    for i in range(5):
        t = span_s * i / 4
        parts.append(
            f'<text x="{x(t):.1f}" y="{HEIGHT - 10}" font-size="10" text-anchor="middle">{t:.1f}s</text>'
        )
        parts.append(
            f'<text x="{LEFT - 4}" y="{y(ymax * i / 4) + 3:.1f}" font-size="10" '
            f'text-anchor="end">{ymax * i / 4:.3g}</text>'
        )
    for name, pts in sorted(series.items()):
        color = COLORS.get(name.split()[0], "#ff7f0e")
        dash = ' stroke-dasharray="4 3"' if name.endswith("max") else ""
        path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash} points="{path}">'
            f"<title>{html.escape(name)}</title></polyline>"
        )
    legend = " &nbsp; ".join(
        f'<span style="color:{COLORS.get(n.split()[0], "#ff7f0e")}">{html.escape(n)}</span>'
        for n in sorted(series)
    )
    parts.append("</svg>")
    return f"<h2>{html.escape(title)} ({unit})</h2><div>{legend}</div>" + "".join(parts)


def render_html(doc: dict, summary: str, timeline, faults) -> str:
    """`timeline`: (rate, latency, span_s, t0) of the history's ok operations, or None."""
    rate, latency, span, t0 = timeline or ({}, {}, 1.0, 0)
    if faults and not timeline:
        span = max(((fw.end or fw.start) - t0) / 1e9 for fw in faults) or 1.0
    lat_series = {}
    for f, pts in latency.items():
        lat_series[f"{f} p50"] = [(t, p50) for t, p50, _ in pts]
        lat_series[f"{f} max"] = [(t, mx) for t, _, mx in pts]
    verdict = "passed" if doc["ok"] else "FAILED"
    rows = "".join(
        f"<tr><td>{html.escape(v['check'])}</td><td>{html.escape(v['partition'] or '')}</td>"
        f"<td>{html.escape(' - '.join(map(str, v['offsets'])))}</td>"
        f"<td>{html.escape(','.join(map(str, v['replicas'])))}</td>"
        f"<td>{html.escape(v['message'])}</td></tr>"
        for v in doc["violations"]
    )
    charts = (
        (
            _chart("Throughput: ok operations per second", "ops/s", rate, span, faults, t0)
            + _chart("Latency: invoke to ok", "ms", lat_series, span, faults, t0)
        )
        if timeline
        else "<p>No history was given: no throughput or latency to show.</p>"
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kraft audit: {verdict}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:{WIDTH + 40}px}}
td,th{{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;font-size:13px}}
pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}.bad{{color:#b00}}.good{{color:#070}}</style>
</head><body>
<h1 class="{"good" if doc["ok"] else "bad"}">kraft audit {verdict}</h1>
<pre>{html.escape(summary)}</pre>
{charts}
<h2>Fault windows</h2><p>{len(faults)} shaded in the charts above.</p>
<h2>Violations ({len(doc["violations"])} listed)</h2>
<table><tr><th>check</th><th>partition</th><th>offsets</th><th>replicas</th><th>what</th></tr>{rows}</table>
<h2>Inputs and figures</h2><pre>{html.escape(json.dumps({"inputs": doc["inputs"], "stats": doc["stats"]}, indent=1))}</pre>
</body></html>
"""
