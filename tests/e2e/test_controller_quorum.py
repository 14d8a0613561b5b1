"""Three controller-only `kraft node` processes form the Raft metadata quorum: `kraft quorum
describe` shows a leader; after kill -9 of the leader another node leads at a higher epoch; the
killed node, restarted on its data, rejoins as a voter that catches up. A missing, damaged or
out-of-range quorum-state stops a controller with a message, never a silent empty vote."""

from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.e2e

NODES = (1, 2, 3)


def describe(kraft, addresses: list[str]) -> dict | None:
    result = kraft(
        "quorum",
        "describe",
        "--bootstrap-controller",
        ",".join(addresses),
        "--timeout",
        "1",
        "--format",
        "json",
        timeout=30,
    )
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


def test_three_controllers_elect_fail_over_and_rejoin(cluster_factory, kraft):
    cluster = cluster_factory(3, 0, start=False)
    nodes = cluster.nodes
    addresses = {i: n.address for i, n in nodes.items()}
    all_addresses = list(addresses.values())
    try:
        for n in nodes.values():
            formatted = kraft("format", "--config", str(n.config), "--cluster-id", "quorum-e2e")
            assert formatted.returncode == 0, formatted.stderr
            assert (n.data_dir / "__cluster_metadata-0" / "quorum-state").exists()
        for n in nodes.values():
            n.spawn()
        for n in nodes.values():
            n.wait_started()

        # 1. A leader is elected, and every voter follows it.
        first = wait_for(
            kraft,
            lambda d: (
                d["leader_id"] in NODES
                and d["role"] == "Leader"
                and {v["id"] for v in d["voters"]} == set(NODES)
            ),
            all_addresses,
            15,
            "a leader",
        )
        old_leader, old_epoch = first["leader_id"], first["leader_epoch"]
        assert first["high_watermark"] >= 0

        # 2. kill -9 the leader: another node leads at a higher epoch.
        nodes[old_leader].kill9()
        survivors = [addresses[i] for i in NODES if i != old_leader]
        second = wait_for(
            kraft,
            lambda d: (
                d["role"] == "Leader"
                and d["leader_id"] not in (None, old_leader)
                and d["leader_epoch"] > old_epoch
            ),
            survivors,
            15,
            "a new leader",
        )
        new_leader = second["leader_id"]

        # 3. The killed node restarts on its data and catches up with the new leader.
        nodes[old_leader].spawn()
        nodes[old_leader].wait_started()
        third = wait_for(
            kraft,
            lambda d: (
                d["role"] == "Leader"
                and d["leader_epoch"] >= second["leader_epoch"]
                and any(
                    v["id"] == old_leader and v["lag"] == 0 and v["last_fetch_ms"] is not None
                    for v in d["voters"]
                )
            ),
            all_addresses,
            15,
            f"node {old_leader} caught up",
        )
        assert third["leader_id"] in NODES and {v["id"] for v in third["voters"]} == set(NODES)
        # Asked alone, the restarted node names the leader too (it is a follower, not a leader).
        own = wait_for(
            kraft,
            lambda d: d["leader_id"] == third["leader_id"],
            [addresses[old_leader]],
            15,
            "the restarted node knowing the leader",
        )
        assert own["answered_by"] == old_leader
        assert new_leader in NODES
    finally:
        cluster.stop()


def test_a_controller_without_quorum_state_refuses_to_start(cluster_factory, kraft):
    node = cluster_factory(1, 0, start=False).nodes[1]
    data = node.data_dir
    assert kraft("format", "--config", str(node.config)).returncode == 0
    (data / "__cluster_metadata-0" / "quorum-state").unlink()

    refused = kraft("node", "--config", str(node.config), timeout=30)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"log dir {data} has no quorum-state; run: kraft format --config" in refused.stderr

    again = kraft("format", "--config", str(node.config), "--ignore-formatted")
    assert again.returncode == 0, again.stderr
    assert (data / "__cluster_metadata-0" / "quorum-state").exists()


def test_a_damaged_quorum_state_stops_the_controller_with_a_message(cluster_factory, kraft):
    node = cluster_factory(1, 0, start=False).nodes[1]
    assert kraft("format", "--config", str(node.config)).returncode == 0
    state = node.data_dir / "__cluster_metadata-0" / "quorum-state"
    state.write_text(state.read_text()[:20])  # torn: never a silent empty vote

    refused = kraft("node", "--config", str(node.config), timeout=30)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"quorum-state at {state} is unreadable" in refused.stderr
    assert "re-format" in refused.stderr


def test_an_epoch_no_election_can_follow_stops_the_controller_in_one_line(cluster_factory, kraft):
    # What one forged BeginQuorumEpoch left behind before requests were checked: every restart
    # then crashed with a protobuf range error.
    node = cluster_factory(3, 0, start=False).nodes[1]
    assert kraft("format", "--config", str(node.config)).returncode == 0
    state = node.data_dir / "__cluster_metadata-0" / "quorum-state"
    doc = json.loads(state.read_text())
    doc.update(leaderEpoch=2**31 - 1, leaderId=2)
    state.write_text(json.dumps(doc) + "\n")

    refused = kraft("node", "--config", str(node.config), timeout=60)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    [line] = [x for x in refused.stderr.splitlines() if x.startswith("kraft node:")]
    assert f"quorum-state at {state}" in line and "leaderEpoch is 2147483647" in line
    assert "kraft format" in line
    assert json.loads(state.read_text()) == doc  # left for the operator to restore


def test_a_controller_formatted_for_another_cluster_is_refused(cluster_factory, kraft):
    cluster = cluster_factory(3, 0, start=False)
    nodes = cluster.nodes
    for i, n in nodes.items():
        assert (
            kraft(
                "format", "--config", str(n.config), "--cluster-id", "ours" if i < 3 else "theirs"
            ).returncode
            == 0
        )
    try:
        for n in nodes.values():
            n.spawn()
        for n in nodes.values():
            n.wait_started()
        addresses = [nodes[1].address, nodes[2].address]
        # Nodes 1 and 2 are a majority: they elect a leader and commit without node 3.
        led = wait_for(
            kraft,
            lambda d: (
                d["role"] == "Leader" and d["leader_id"] in (1, 2) and d["high_watermark"] > 0
            ),
            addresses,
            15,
            "a leader of nodes 1 and 2",
        )
        stranger = next(v for v in led["voters"] if v["id"] == 3)
        assert stranger["log_end_offset"] == -1 and stranger["last_fetch_ms"] is None
        own = wait_for(kraft, lambda d: True, [nodes[3].address], 15, "node 3 answering")
        assert own["leader_id"] not in (1, 2) and own["log_end_offset"] == 0
        # Node 3 asks for votes once its own election timeout passes, maybe after the above.
        refusal = "from node 3: cluster_id is 'theirs' but node"
        deadline = time.monotonic() + 15
        while refusal not in "".join((cluster.root / f"node-{i}.log").read_text() for i in (1, 2)):
            assert time.monotonic() < deadline, f"no node of 1 and 2 logged {refusal!r}"
            time.sleep(0.1)
    finally:
        cluster.stop()
