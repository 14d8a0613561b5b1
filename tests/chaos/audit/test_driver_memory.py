"""The audit's driver holds nothing the size of the history: `kraft audit` over a history twenty
times larger peaks at about the same driver memory (the Python process that plans the job), and
runs with a small JVM driver (KRAFT_AUDIT_DRIVER_MEMORY=512m)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from system_tools import require_tool

from chaos.history import JsonLinesWriter, Op

ROOT = pathlib.Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
# Runs `kraft audit` and prints the Python driver's peak RSS (KiB) on its last stderr line.
AUDIT_WITH_PEAK = """
import resource, runpy, sys
sys.argv = ["kraft"] + sys.argv[1:]
try:
    runpy.run_module("entry.main", run_name="__main__")
finally:
    print("peak-rss-kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def write_history(path: pathlib.Path, values: int, partitions: int = 4) -> int:
    """A clean history: every value sent (invoke, ok at its offset) and polled once, in order."""
    t = 0
    with JsonLinesWriter(path) as w:
        w.write(Op("r", "invoke", "assign", t, [f"t-{p}" for p in range(partitions)]))
        w.write(Op("r", "ok", "assign", t, [f"t-{p}" for p in range(partitions)]))
        for v in range(values):
            p, offset = v % partitions, v // partitions
            t += 1000
            w.write(Op(v % 7, "invoke", "send", t, v, f"t-{p}"))
            w.write(Op(v % 7, "ok", "send", t + 1, v, f"t-{p}", offset))
            if v % 50 == 49:  # the last 50 values, each at its partition and offset
                polled: dict = {}
                for u in range(v - 49, v + 1):
                    polled.setdefault(f"t-{u % partitions}", []).append([u // partitions, u])
                w.write(Op("r", "invoke", "poll", t + 2))
                w.write(Op("r", "ok", "poll", t + 3, polled))
    return path.stat().st_size


def audit_peak_kib(history: pathlib.Path, out: pathlib.Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KRAFT_AUDIT_DRIVER_MEMORY": "512m"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            AUDIT_WITH_PEAK,
            "audit",
            "--history",
            str(history),
            "--master",
            "local[2]",
            "--out",
            str(out),
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1].split()
    assert last[0] == "peak-rss-kib", done.stderr[-2000:]
    return int(last[1])


def test_the_drivers_memory_does_not_grow_with_the_history(tmp_path):
    pytest.importorskip("pyspark")
    require_tool("java")
    small = write_history(tmp_path / "small.jsonl", 10_000)
    large = write_history(tmp_path / "large.jsonl", 200_000)
    assert large > 15 * small
    peak_small = audit_peak_kib(tmp_path / "small.jsonl", tmp_path / "out-small")
    peak_large = audit_peak_kib(tmp_path / "large.jsonl", tmp_path / "out-large")
    # The large history is tens of MB more; a driver that parsed or collected it would grow by
    # several times that. Allow a fifth of the difference for Spark's and Python's own noise.
    assert peak_large - peak_small < (large - small) / 1024 / 5, (
        peak_small,
        peak_large,
        small,
        large,
    )
