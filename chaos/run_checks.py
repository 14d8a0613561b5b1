"""A chaos run's end: its own quick check of the history, `kraft audit` on the run's files, and
`finish`, which writes summary.json and decides the exit code."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
from typing import TYPE_CHECKING

from chaos.history import read_history
from chaos.workload import DRAIN_PROCESS

if TYPE_CHECKING:
    from chaos.run import Run


def quick_check(history_path: pathlib.Path) -> list[str]:
    """The run's own minimal check, used when `kraft audit` is not there: every acknowledged
    send is in the final drain at its offset, and no value is read at two offsets."""
    acked, drained, problems = {}, {}, []
    for op in read_history(history_path):
        if op.f == "send" and op.type == "ok":
            acked[(op.partition, op.value)] = op.offset
        elif op.f == "poll" and op.type == "ok" and op.process == DRAIN_PROCESS:
            for part, pairs in op.reads().items():
                for offset, value in pairs:
                    if drained.setdefault((part, value), offset) != offset:
                        problems.append(
                            f"{part}: value {value} read at offsets "
                            f"{drained[(part, value)]} and {offset}"
                        )
    for (part, value), offset in sorted(acked.items(), key=lambda kv: (kv[0][0], kv[1])):
        if drained.get((part, value)) != offset:
            problems.append(
                f"{part}: value {value} acknowledged at offset {offset} but drained at "
                f"{drained.get((part, value), 'no offset (lost)')}"
            )
    return problems


def audit(out: pathlib.Path, log) -> int | None:
    """`kraft audit` on the run's files; None when this checkout has no audit command yet."""
    base = [sys.executable, "-m", "entry.main", "audit"]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}
    probe = subprocess.run(base + ["--help"], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        return None
    cmd = base + ["--data", str(out / "nodes"), "--history", str(out / "history.jsonl")]
    if (out / "txn_history.jsonl").exists():
        cmd += ["--txn-history", str(out / "txn_history.jsonl")]
    for flag, value in (("--faults", out / "faults.jsonl"), ("--out", out)):
        if flag in probe.stdout:
            cmd += [flag, str(value)]
    log(f"audit: {' '.join(cmd[1:])}")
    return subprocess.run(cmd, env=env).returncode


def finish(run: Run, summary: dict, args: argparse.Namespace) -> int:
    out = run.out
    problems = quick_check(out / "history.jsonl")
    summary["quick_check"] = problems[:50]
    code = None if args.no_audit else audit(out, run.log)
    summary["audit_exit_code"] = code
    if code is None:
        run.log(
            "audit: skipped (--no-audit)"
            if args.no_audit
            else "audit: `kraft audit` is not in this checkout yet; used the run's own check"
        )
        code = 1 if problems else 0
    live = (
        summary["drain"]["complete"]
        and summary["ok_send_after_heal"]
        and summary.get("transactional", {}).get("drain", "complete") == "complete"
    )
    if not live:
        run.log(
            "the cluster did not recover: "
            + (
                "drain incomplete"
                if not summary["drain"]["complete"]
                else "no acknowledged send after the heal"
            )
        )
    summary["exit_code"] = code if live else max(code, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    run.log(
        f"ops {summary['ops']}; {len(summary['faults'])} faults; own check: "
        f"{len(problems)} problems{': ' + problems[0] if problems else ''}"
    )
    run.log(f"done: {out} (exit {summary['exit_code']})")
    return summary["exit_code"]
