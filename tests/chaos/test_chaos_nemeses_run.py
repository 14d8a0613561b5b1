"""A real chaos run with the four nemeses beyond kill, pause and partition: `chaos/run.sh
--duration 40s --nemesis net,clock,disk-full,corrupt --seed 14` shapes a leader's packets,
strobes a node's clock, fills a leader's disk and twice kills a broker and damages a partition
file past its recovery point; after the heal the cluster drains and the audit finds nothing (the
damage was cut and refetched, never served). Nothing is left behind: no namespace, no mount, no
shaper, every clock offset back to 0."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from chaos import netns
from chaos.history import read_faults
from chaos.nemeses.disk import leftover_mounts

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def permitted():
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)


def test_net_clock_disk_full_and_corrupt_pass_the_audit(permitted, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "VIRTUAL_ENV": str(pathlib.Path(sys.executable).parent.parent)}
    done = subprocess.run(
        [
            str(ROOT / "chaos" / "run.sh"),
            "--duration",
            "40s",
            "--interval",
            "4s",
            "--nemesis",
            "net,clock,disk-full,corrupt",
            "--seed",
            "14",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=840,
    )
    tail = done.stderr[-4000:]
    assert done.returncode != 2, tail
    summary = json.loads((out / "summary.json").read_text())
    assert summary["drain"]["complete"] and summary["ok_send_after_heal"], tail

    windows = read_faults(out / "faults.jsonl")
    assert {w.nemesis.split("-")[0] for w in windows} >= {"net", "clock", "disk", "corrupt"}, tail
    log = (out / "nemesis.log").read_text()
    assert "(nfqueue)" in log or "(netem)" in log
    assert "cut the file at" in log or "flipped a byte at" in log  # damage was really done
    assert "filled" in log
    report = json.loads((out / "report.json").read_text())
    assert any(n.startswith("corrupt x") for n in report["fault_costs"])

    assert netns.namespaces() == []
    assert leftover_mounts([out]) == []
    assert not (out / "nodes" / "node-1" / "data" / ".chaos-disk-full").exists()
    assert all((out / "clock" / f"node-{i}.offset").read_bytes() == bytes(8) for i in range(1, 7))
    shapers = subprocess.run(
        ["pgrep", "-f", "chaos.nemeses.shaper"], capture_output=True, text=True
    )
    assert shapers.stdout.strip() == ""
    assert done.returncode == 0, done.stdout[-6000:]
