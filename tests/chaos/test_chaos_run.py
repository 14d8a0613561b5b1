"""A real chaos run, short: `chaos/run.sh --duration 20s --nemesis kill,pause,partition` starts six
node processes in their own network namespaces, injects faults, heals, drains and exits; its
history has acknowledged sends, a consumer group's commits and the final drain, its fault log
windows with start and end; an exactly-once processor (--transactional 1) committed and aborted
transactions through the faults; the audit finds nothing (exit 0): no acknowledged write lost,
duplicated or moved, no aborted or uncommitted write read, every input transformed once."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from system_tools import require_tool

from chaos import netns
from chaos.history import read_faults, read_history

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def permitted():
    reason = netns.unavailable_reason()
    if reason:
        print(f"chaos run skipped: {reason}")
        pytest.skip(reason)
    require_tool("java")  # the run ends with the PySpark audit


def test_a_short_run_injects_faults_heals_and_drains(permitted, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "VIRTUAL_ENV": str(pathlib.Path(sys.executable).parent.parent)}
    done = subprocess.run(
        [
            str(ROOT / "chaos" / "run.sh"),
            "--duration",
            "20s",
            "--nemesis",
            "kill,pause,partition",
            "--interval",
            "4s",
            "--seed",
            "1",
            "--transactional",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=840,
    )
    tail = done.stderr[-4000:]
    assert done.returncode != 2, tail  # 2: the run itself broke
    summary = json.loads((out / "summary.json").read_text())
    assert summary["drain"]["complete"], tail
    assert summary["exit_code"] == done.returncode

    ops = read_history(out / "history.jsonl")
    assert sum(1 for op in ops if op.f == "send" and op.type == "ok") >= 100
    drained = [op for op in ops if op.process == "drain" and op.f == "poll" and op.type == "ok"]
    assert sum(len(pairs) for op in drained for pairs in op.reads().values()) > 0
    assert all(op.time >= 0 for op in ops)
    # The consumer group's members polled and committed through the faults (its offsets are
    # checked by commit-backwards, its polls like every other consumer's).
    commits = [op for op in ops if op.f == "commit" and op.type == "ok"]
    assert commits and all(op.group == "chaos-group" for op in commits), tail
    assert any(op.f == "subscribe" and op.type == "ok" for op in ops)

    # The transactional workload ran: transactions committed and aborted, all drained.
    assert summary["transactional"]["drain"] == "complete", summary["transactional"]
    txns = [json.loads(line) for line in (out / "txn_history.jsonl").read_text().splitlines()]
    ended = {t["type"] for t in txns if t["f"] == "txn" and t["type"] != "invoke"}
    assert {"ok", "fail"} <= ended, summary["transactional"]
    assert any(t["f"] == "drain-out" for t in txns)

    windows = read_faults(out / "faults.jsonl")
    assert len(windows) >= 2, tail
    assert all(w.end is not None and 0 <= w.start < w.end for w in windows)
    assert all(w.targets for w in windows)
    for i in range(1, 7):
        assert (out / "nodes" / f"node-{i}" / "data" / "meta.properties").exists()
    assert "heal" in (out / "nemesis.log").read_text()
    # Nothing is left behind: no namespace, no bridge.
    assert netns.namespaces() == []
    assert subprocess.run(["ip", "link", "show", netns.BRIDGE], capture_output=True).returncode != 0
    # 1: the audit (or the run's own check) found violations; the report names them.
    assert done.returncode == 0, done.stdout[-6000:]
