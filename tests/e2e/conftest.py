"""Fixtures for end-to-end tests: a real `kraft dev` node process on a free loopback port, with
kill -9, SIGTERM and restart on the same data dir."""

from __future__ import annotations

import os
import pathlib
import signal
import sys

import pytest

# Sibling helper modules (processes.py, waiting.py) import by name under --import-mode=importlib.
if str(pathlib.Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(pathlib.Path(__file__).parent))

from processes import ROOT, Cluster, NodeProcess, run_kraft  # noqa: E402,F401


@pytest.fixture
def node(tmp_path):
    n = NodeProcess(tmp_path / "node1").start()
    yield n
    if n.proc.poll() is None:
        n.proc.kill()
        n.proc.wait(10)


@pytest.fixture
def node_factory(tmp_path):
    started: list[NodeProcess] = []

    def make(name: str = "node1", overrides: list[str] | None = None) -> NodeProcess:
        n = NodeProcess(tmp_path / name, overrides)
        started.append(n)
        return n

    yield make
    for n in started:
        if n.proc is not None and n.proc.poll() is None:
            n.proc.kill()
            n.proc.wait(10)


@pytest.fixture
def kraft():
    return run_kraft


@pytest.fixture
def cluster_factory(tmp_path):
    made: list[Cluster] = []

    def make(
        controllers: int = 3,
        brokers: int = 3,
        start: bool = True,
        node_overrides: dict[int, dict[str, str]] | None = None,
        **overrides: str,
    ) -> Cluster:
        """Overrides as keyword arguments: controller_quorum_fetch_timeout_ms="1000"; keys
        of one node (its certificate, say) in node_overrides={id: {key: value}}."""
        c = Cluster(
            tmp_path,
            controllers,
            brokers,
            {k.replace("_", "."): v for k, v in overrides.items()},
            node_overrides,
        )
        made.append(c)
        return c.start() if start else c

    yield make
    for c in made:
        for n in c.nodes.values():
            if n.alive():
                n.proc.kill()
                n.proc.wait(10)


@pytest.fixture
def dev_data(tmp_path):
    """A data dir for `kraft dev --detach`; every kraft process its cluster.json names (node or
    supervisor) is killed afterwards, whatever the test left running."""
    import json

    from entry.dev_cluster import is_kraft_process

    d = tmp_path / "dev"
    yield d
    if (d / "cluster.json").exists():
        doc = json.loads((d / "cluster.json").read_text())
        for pid in [doc.get("supervisor_pid")] + [n.get("pid") for n in doc.get("nodes", [])]:
            if pid and is_kraft_process(pid):
                os.kill(pid, signal.SIGKILL)
