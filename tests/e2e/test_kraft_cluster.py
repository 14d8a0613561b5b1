"""3 controllers + 3 brokers as real processes: brokers register and replay the metadata log as
observers; kill -9 of the active controller while topics are being created: a new controller
serves writes, no acknowledged topic is lost, every broker's image converges, and the old
controller, restarted, catches up."""

from __future__ import annotations

import json
import threading

import grpc
import pytest
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.errors import KraftError
from clients.wire import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.e2e

# Tuned for fast failover (Kafka's defaults detect a dead leader after 2 s of fetch timeout).
FAST = dict(
    controller_quorum_fetch_timeout_ms="1000",
    controller_quorum_election_timeout_ms="300",
    controller_quorum_request_timeout_ms="1000",
    broker_session_timeout_ms="4000",
    broker_heartbeat_interval_ms="500",
)


def metadata(address: str) -> broker_pb2.MetadataResponse:
    with grpc.insecure_channel(address) as channel:
        return broker_pb2_grpc.BrokerStub(channel).Metadata(
            broker_pb2.MetadataRequest(all_topics=True), timeout=5
        )


def topic_view(address: str) -> dict:
    """What one broker's image says: topic -> [(partition, replicas, leader, leader_epoch)]."""
    return {
        t.name: sorted(
            (p.partition, tuple(p.replicas), p.leader, p.leader_epoch) for p in t.partitions
        )
        for t in metadata(address).topics
    }


def quorum(kraft, cluster) -> dict | None:
    result = kraft(
        "quorum",
        "describe",
        "--bootstrap-controller",
        ",".join(c.address for c in cluster.controllers if c.alive()),
        "--timeout",
        "1",
        "--format",
        "json",
        timeout=30,
    )
    return json.loads(result.stdout) if result.returncode == 0 else None


def test_brokers_register_and_serve_topics_from_the_metadata_log(cluster_factory):
    cluster = cluster_factory(3, 3, **FAST)
    brokers = {b.node_id for b in cluster.brokers}
    with Admin(cluster.bootstrap) as admin:
        # Each broker learns of the others' unfencing through the metadata log: soon, not at once.
        eventually(
            lambda: {b["id"] for b in admin.describe_cluster()["brokers"]} == brokers,
            10,
            "every broker registered and unfenced",
        )
        admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=3)])
        with pytest.raises(KraftError) as too_many:
            admin.create_topics([NewTopic("wide", num_partitions=1, replication_factor=4)])
        assert too_many.value.code == 38  # INVALID_REPLICATION_FACTOR
        with pytest.raises(KraftError) as exists:
            admin.create_topics([NewTopic("orders", num_partitions=1)])
        assert exists.value.code == 36  # TOPIC_ALREADY_EXISTS
    views = eventually(
        lambda: (
            (v := [topic_view(b.address) for b in cluster.brokers])
            and v[0] == v[1] == v[2]
            and "orders" in v[0]
            and v
        ),
        10,
        "brokers agreeing",
    )
    partitions = views[0]["orders"]
    assert len(partitions) == 6
    assert all(
        set(replicas) == brokers and leader in brokers for _, replicas, leader, _ in partitions
    )
    # Leadership is spread: every broker leads some partition.
    assert {leader for _, _, leader, _ in partitions} == brokers


def test_killing_the_active_controller_while_creating_topics_loses_nothing(cluster_factory, kraft):
    cluster = cluster_factory(3, 3, **FAST)
    first = eventually(
        lambda: (q := quorum(kraft, cluster)) and q["role"] == "Leader" and q,
        30,
        "an active controller",
    )
    old_leader, old_epoch = first["leader_id"], first["leader_epoch"]

    acknowledged: list[str] = []
    failures: list[str] = []
    stop = threading.Event()

    def create_topics() -> None:
        with Admin(cluster.bootstrap) as admin:
            i = 0
            while not stop.is_set():
                name = f"t{i}"
                try:
                    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=2)])
                    acknowledged.append(name)
                except KraftError as exc:
                    failures.append(f"{name}: {exc}")
                i += 1

    writer = threading.Thread(target=create_topics)
    writer.start()
    try:
        eventually(lambda: len(acknowledged) >= 5, 30, "topics created before the kill")
        cluster.nodes[old_leader].kill9()
        killed_at = len(acknowledged)
        eventually(
            lambda: len(acknowledged) >= killed_at + 5,
            30,
            f"topics created after kill -9 of controller {old_leader} (failures: {failures[-3:]})",
        )
    finally:
        stop.set()
        writer.join(60)

    second = eventually(
        lambda: (q := quorum(kraft, cluster)) and q["role"] == "Leader" and q,
        30,
        "a new active controller",
    )
    assert second["leader_id"] != old_leader and second["leader_epoch"] > old_epoch

    # Every broker converges on one image holding every acknowledged topic.
    def converged():
        views = [topic_view(b.address) for b in cluster.brokers]
        return (
            views
            if all(v == views[0] for v in views) and set(acknowledged) <= set(views[0])
            else None
        )

    views = eventually(converged, 30, "brokers converging on every acknowledged topic")
    assert all(len(views[0][name]) == 2 for name in acknowledged)

    # The killed controller restarts on its data and catches up with the leader's log.
    cluster.nodes[old_leader].spawn()
    cluster.nodes[old_leader].wait_started()
    eventually(
        lambda: (
            (q := quorum(kraft, cluster))
            and q["role"] == "Leader"
            and any(v["id"] == old_leader and v["lag"] == 0 for v in q["voters"])
        ),
        30,
        f"controller {old_leader} caught up",
    )
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("after-rejoin", num_partitions=1, replication_factor=3)])
    eventually(
        lambda: all("after-rejoin" in topic_view(b.address) for b in cluster.brokers),
        30,
        "the last topic on every broker",
    )
