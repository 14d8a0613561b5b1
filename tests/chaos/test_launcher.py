"""chaos.launcher, the one launcher kraft dev, chaos and the tests share: a node's
server.properties wires it into its cluster, ports are distinct, brokers stop before the
controllers they report to, and an unreadable cluster.json is one line of help."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from chaos import launcher
from chaos.launcher import Target


def test_a_node_is_wired_by_its_role_and_settings_come_after_the_wiring():
    voters = launcher.quorum_voters([(1, "h:9093"), (2, "h:9193")])
    assert voters == "1@h:9093,2@h:9193"
    props = launcher.node_properties(
        4, "broker", "h:9092", voters, pathlib.Path("/d/node-4"), {"num.partitions": "3"}
    )
    assert props == {
        "node.id": "4",
        "process.roles": "broker",
        "listeners": "PLAINTEXT://h:9092",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@h:9093,2@h:9193",
        "log.dirs": "/d/node-4",
        "num.partitions": "3",
    }
    controller = launcher.node_properties(1, "controller", "h:9093", voters, "/d/node-1")
    assert controller["listeners"] == "CONTROLLER://h:9093"
    assert (
        launcher.properties_text("node 1 (controller)", {"a": "1", "b": "2"})
        == "# node 1 (controller)\na=1\nb=2\n"
    )


def test_free_ports_are_distinct():
    ports = launcher.free_ports("127.0.0.1", 5)
    assert len(set(ports)) == 5 and all(0 < p < 65536 for p in ports)


def test_brokers_stop_before_controllers(monkeypatch):
    order = []

    class Fake(Target):
        running = True

        def alive(self):
            return self.running

        def send(self, signum):
            order.append(self.label)
            self.running = False

    monkeypatch.setattr(launcher.time, "sleep", lambda s: None)
    stopped = launcher.stop_in_order(
        [Fake("c1", 1, controller=True), Fake("b4", 4), Fake("gone", 5)], grace=1.0
    )
    assert order == ["b4", "gone", "c1"]
    assert [(t.label, killed) for t, killed in stopped] == [
        ("b4", False),
        ("gone", False),
        ("c1", False),
    ]


def test_a_process_ignoring_sigterm_is_reported_killed():
    ignore_sigterm = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(flush=True); time.sleep(60)"
    )
    stubborn = subprocess.Popen([sys.executable, "-c", ignore_sigterm], stdout=subprocess.PIPE)
    try:
        stubborn.stdout.readline()  # its SIGTERM handler is set once it printed
        [(_target, killed)] = launcher.stop_in_order(
            [Target("node 9", stubborn.pid, stubborn)], 0.3
        )
        assert killed and stubborn.wait(5) == -9
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
        stubborn.wait(10)


def test_cluster_json_round_trips_and_a_broken_one_names_the_fix(tmp_path):
    assert launcher.read_cluster_json(tmp_path) is None
    entry = launcher.node_entry(
        4, ("broker",), "h:9092", 123, tmp_path / "d", tmp_path / "c", tmp_path / "l"
    )
    launcher.write_cluster_json(tmp_path, {"cluster_id": "c", "nodes": [entry]})
    assert launcher.read_cluster_json(tmp_path)["nodes"] == [entry]
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(launcher.ClusterFileError, match="unreadable.*delete it if no cluster runs"):
        launcher.read_cluster_json(tmp_path)
