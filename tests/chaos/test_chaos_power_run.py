"""A real chaos run with the power nemesis alone: `chaos/run.sh --duration 30s --nemesis power
--seed 2` cuts the power of the active controller, a broker and two leaders in turn (each node
killed, its unsynced writes and undurable renames dropped, restarted on what it had synced);
after the heal the cluster drains and the audit finds nothing: no acks=all send lost, no
committed metadata record lost, one leader per epoch. Nothing is left mounted, and each node's
data dir is a plain dir again."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from chaos import netns
from chaos.history import read_faults
from chaos.nemeses.power import leftover_mounts, unavailable
from tests.system_tools import INSTALL_POWER

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def permitted():
    reason = netns.unavailable_reason() or unavailable()
    if reason:
        pytest.skip(f"{reason} (CI installs it: {INSTALL_POWER})")


def test_power_cuts_pass_the_audit(permitted, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "VIRTUAL_ENV": str(pathlib.Path(sys.executable).parent.parent)}
    done = subprocess.run(
        [
            str(ROOT / "chaos" / "run.sh"),
            "--duration",
            "30s",
            "--interval",
            "4s",
            "--nemesis",
            "power",
            "--seed",
            "2",
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
    assert len(windows) >= 3 and {w.nemesis for w in windows} == {"power"}, tail
    log = (out / "nemesis.log").read_text()
    assert log.count("unsynced writes dropped") == len(windows)
    report = json.loads((out / "report.json").read_text())
    assert any(n.startswith("power x") for n in report["fault_costs"])

    assert netns.namespaces() == []
    assert leftover_mounts([out]) == []
    nodes = out / "nodes"
    assert not list(nodes.glob("node-*/data.backing"))
    assert all((nodes / f"node-{i}" / "data" / "meta.properties").exists() for i in range(1, 7))
    banners = sum(
        (nodes / f"node-{i}" / "node.log").read_text().count("restart after power cut of")
        for i in range(1, 7)
    )
    assert banners == len(windows)  # each cut node came back
    assert done.returncode == 0, done.stdout[-6000:]
