"""The audit's outputs: report.json (everything, for scripts), the readable summary printed at the
end, and report.html (summary plus throughput and latency over time, fault windows shaded)."""

from __future__ import annotations

import json
from pathlib import Path

from chaos.audit.checks import CHECKS, AuditResult
from chaos.audit.html import render_html

SUMMARY_LISTED = 10  # violations per check in the summary; report.json lists up to 200


def report_json(result: AuditResult, inputs: dict) -> dict:
    return {
        "ok": result.ok,
        "inputs": inputs,
        "checks": {
            name: {
                "ran": name in result.checks_run,
                "violations": result.totals.get(name, 0),
                "meaning": CHECKS[name],
            }
            for name in CHECKS
        },
        "violations": [v.to_json() for v in result.violations],
        "notices": result.notices,
        "fault_costs": result.fault_costs,
        "stats": result.stats,
    }


def summary_text(result: AuditResult) -> str:
    lines = []
    for name in CHECKS:
        if name not in result.checks_run:
            lines.append(f"  skip  {name}")
            continue
        found = [v for v in result.violations if v.check == name]
        total = result.totals.get(name, len(found))
        if not total:
            lines.append(f"  ok    {name}")
            continue
        lines.append(
            f"  FAIL  {name}: {total} violation{'s' if total != 1 else ''} ({CHECKS[name]})"
        )
        lines += [f"          {v.line()}" for v in found[:SUMMARY_LISTED]]
        if total > SUMMARY_LISTED:
            lines.append(f"          ... and {total - SUMMARY_LISTED} more (see report.json)")
    lines += [f"  note: {n}" for n in result.notices]
    lines += [f"  fault: {n}" for n in result.fault_costs]
    s = result.stats
    figures = (
        [
            f"{s['segment_bytes'] / 2**20:.1f} MB of segments ({s.get('batches', 0)} batches, "
            f"{s.get('records', 0)} records) scanned in {s['scan_seconds']} s"
        ]
        if "segment_bytes" in s
        else []
    )
    if "operations" in s:
        figures.append(f"{s['operations']} history operations")
    figures.append(f"{s.get('seconds', 0)} s in all")
    failed = sum(1 for n in result.checks_run if result.totals.get(n))
    verdict = (
        f"audit passed: {len(result.checks_run)} checks, no violations"
        if result.ok
        else f"audit FAILED: {sum(result.totals.values())} violations in {failed} of "
        f"{len(result.checks_run)} checks"
    )
    return "\n".join([verdict] + lines + ["  " + "; ".join(figures)])


def write_reports(result: AuditResult, out_dir: Path, inputs: dict, faults=()) -> tuple[Path, Path]:
    """Writes report.json and report.html into `out_dir` (created); returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = report_json(result, inputs)
    json_path = out_dir / "report.json"
    json_path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    html_path = out_dir / "report.html"
    html_path.write_text(render_html(doc, summary_text(result), result.timeline, faults))
    return json_path, html_path
