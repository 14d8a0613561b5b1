"""Three controller-only `kraft node` processes form the Raft metadata quorum: `kraft quorum
describe` shows a leader; after kill -9 of the leader another node leads at a higher epoch; the
killed node, restarted on its data, rejoins as a voter that catches up."""
from __future__ import annotations

import json
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODES = (1, 2, 3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Controller:
    def __init__(self, node_id: int, tmp_path, voters: str, address: str) -> None:
        self.node_id = node_id
        self.address = address
        self.config = tmp_path / f"controller-{node_id}.properties"
        self.config.write_text(f"process.roles=controller\nnode.id={node_id}\n"
                               f"listeners=CONTROLLER://{address}\n"
                               f"controller.listener.names=CONTROLLER\n"
                               f"controller.quorum.voters={voters}\n"
                               f"log.dirs={tmp_path / f'data-{node_id}'}\n")
        self.log_path = tmp_path / f"controller-{node_id}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "broker.cli", "node", "--config", str(self.config)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready and b"listening on " + self.address.encode() in self.proc.stdout.readline():
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"controller {self.node_id} did not start; log:\n"
                             f"{self.log_path.read_text()[-3000:]}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def describe(kraft, addresses: list[str]) -> dict | None:
    result = kraft("quorum", "describe", "--bootstrap-controller", ",".join(addresses),
                       "--timeout", "1", "--format", "json", timeout=30)
    if result.returncode != 0:
        return None
    return json.loads(result.stdout)


def wait_for(kraft, predicate, addresses: list[str], within: float, what: str) -> dict:
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        last = describe(kraft, addresses)
        if last is not None and predicate(last):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen within {within} s; last describe: {last}")


def test_three_controllers_elect_fail_over_and_rejoin(tmp_path, kraft):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in NODES}
    voters = ",".join(f"{i}@{a}" for i, a in addresses.items())
    nodes = {i: Controller(i, tmp_path, voters, addresses[i]) for i in NODES}
    all_addresses = list(addresses.values())
    try:
        for n in nodes.values():
            formatted = kraft("format", "--config", str(n.config), "--cluster-id", "quorum-e2e")
            assert formatted.returncode == 0, formatted.stderr
            assert (tmp_path / f"data-{n.node_id}" / "__cluster_metadata-0" / "quorum-state").exists()
        for n in nodes.values():
            n.start()

        # 1. A leader is elected, and every voter follows it.
        first = wait_for(kraft, lambda d: d["leader_id"] in NODES and d["role"] == "Leader"
                         and {v["id"] for v in d["voters"]} == set(NODES),
                         all_addresses, 15, "a leader")
        old_leader, old_epoch = first["leader_id"], first["leader_epoch"]
        assert first["high_watermark"] >= 0

        # 2. kill -9 the leader: another node leads at a higher epoch.
        nodes[old_leader].kill9()
        survivors = [addresses[i] for i in NODES if i != old_leader]
        second = wait_for(kraft, lambda d: d["role"] == "Leader"
                          and d["leader_id"] not in (None, old_leader)
                          and d["leader_epoch"] > old_epoch, survivors, 15, "a new leader")
        new_leader = second["leader_id"]

        # 3. The killed node restarts on its data and catches up with the new leader.
        nodes[old_leader].start()
        third = wait_for(
            kraft, lambda d: d["role"] == "Leader" and d["leader_epoch"] >= second["leader_epoch"]
            and any(v["id"] == old_leader and v["lag"] == 0 and v["last_fetch_ms"] is not None
                    for v in d["voters"]),
            all_addresses, 15, f"node {old_leader} caught up")
        assert third["leader_id"] in NODES and {v["id"] for v in third["voters"]} == set(NODES)
        # Asked alone, the restarted node names the leader too (it is a follower, not a leader).
        own = wait_for(kraft, lambda d: d["leader_id"] == third["leader_id"],
                       [addresses[old_leader]], 15, "the restarted node knowing the leader")
        assert own["answered_by"] == old_leader
        assert new_leader in NODES
    finally:
        for n in nodes.values():
            if n.alive():
                n.proc.send_signal(signal.SIGTERM)
                try:
                    n.proc.wait(15)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
                    n.proc.wait(10)


def test_a_controller_without_quorum_state_refuses_to_start(tmp_path, kraft):
    address = f"127.0.0.1:{free_port()}"
    node = Controller(1, tmp_path, f"1@{address}", address)
    data = tmp_path / "data-1"
    assert kraft("format", "--config", str(node.config)).returncode == 0
    (data / "__cluster_metadata-0" / "quorum-state").unlink()

    refused = kraft("node", "--config", str(node.config), timeout=30)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"log dir {data} has no quorum-state; run: kraft format --config" in refused.stderr

    again = kraft("format", "--config", str(node.config), "--ignore-formatted")
    assert again.returncode == 0, again.stderr
    assert (data / "__cluster_metadata-0" / "quorum-state").exists()
