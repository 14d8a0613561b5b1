"""Where an audit's time goes: `run_audit` in this process on local[2], over the files that
bench/audit_run_bench.py built, with the wall time and the CPU seconds of each stage (from one
progress line to the next), split between the JVM and the Python processes (this driver and
Spark's workers).

    python bench/audit_stages.py --dir /tmp/run30 --repo /work/main
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def cpu_by_kind(root: int) -> dict[str, float]:
    """User and system CPU seconds of `root` and its live descendants: {"java": s, "python": s}
    (anything not a JVM counts as Python)."""
    parents, cpu, names = {}, {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[1].split()
        pid = int(d)
        names[pid] = raw[raw.index("(") + 1 : raw.rindex(")")]
        parents[pid], cpu[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    out = {"java": 0.0, "python": 0.0}
    for pid, seconds in cpu.items():
        p = pid
        while p in parents and p != root:
            p = parents[p]
        if p == root:
            out["java" if names[pid] == "java" else "python"] += seconds
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", required=True, help="a run's files, as audit_run_bench.py builds them")
    ap.add_argument(
        "--repo",
        default=str(Path(__file__).resolve().parents[1]),
        help="the checkout whose audit runs",
    )
    args = ap.parse_args()
    root = Path(args.dir).resolve()
    sys.path.insert(0, args.repo)
    # Spark's Python workers import the same checkout: they run `python -m`, which puts their
    # working directory (this process's) before PYTHONPATH
    os.environ["PYTHONPATH"] = args.repo
    os.chdir(args.repo)
    from chaos.audit import job

    marks = [("start", time.monotonic(), cpu_by_kind(os.getpid()))]

    def mark(line: str) -> None:
        marks.append((line, time.monotonic(), cpu_by_kind(os.getpid())))

    spark = job.create_session("local[2]")
    mark("Spark started")
    result = job.run_audit(spark, [str(root / "nodes")], str(root / "history.jsonl"), progress=mark)
    mark("checks done")
    print(f"{job.__file__}; load average {os.getloadavg()[0]:.1f}")
    print("stage (ends at this line)                          wall   JVM CPU  Python CPU")
    for (_, w0, c0), (line, w1, c1) in zip(marks, marks[1:]):
        print(
            f"{line[:48]:48s} {w1 - w0:6.1f} s {c1['java'] - c0['java']:7.1f} "
            f"{c1['python'] - c0['python']:9.1f}"
        )
    print(f"{len(result.violations)} violations; audit {result.stats['seconds']} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
