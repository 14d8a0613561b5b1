"""Replication with real processes (3 controllers, 3 brokers, RF=3, min.insync.replicas=2):
producing with acks=all while kill -9 hits the partition leader loses no acknowledged record;
each is read back exactly once at its acknowledged offset from the new leader; the old leader,
restarted, truncates any divergent tail and rejoins the ISR with a log identical to the leader's."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition
from clients.wire import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.e2e

FAST = dict(
    controller_quorum_fetch_timeout_ms="1000",
    controller_quorum_election_timeout_ms="300",
    controller_quorum_request_timeout_ms="1000",
    broker_session_timeout_ms="3000",
    broker_heartbeat_interval_ms="300",
    replica_lag_time_max_ms="3000",
)


def partition_state(address: str, topic: str) -> broker_pb2.PartitionMetadata | None:
    try:
        with grpc.insecure_channel(address) as channel:
            resp = broker_pb2_grpc.BrokerStub(channel).Metadata(
                broker_pb2.MetadataRequest(topics=[topic]), timeout=5
            )
    except grpc.RpcError:
        return None
    parts = resp.topics[0].partitions if resp.topics else []
    return parts[0] if parts else None


def replicated_topic(cluster, topic: str):
    """A 1-partition topic, RF=3, min.insync.replicas=2; its state once all 3 are in sync."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics(
            [
                NewTopic(
                    topic,
                    num_partitions=1,
                    replication_factor=3,
                    configs={"min.insync.replicas": "2"},
                )
            ]
        )
    return eventually(
        lambda: (p := partition_state(cluster.brokers[0].address, topic)) and len(p.isr) == 3 and p,
        30,
        "the full ISR",
    )


def read_all(bootstrap: str, tp: TopicPartition, until: set[int]) -> dict[int, bytes]:
    read: dict[int, bytes] = {}
    with Consumer(bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not until <= set(read):
            for r in consumer.poll(timeout_ms=500):
                assert r.offset not in read, f"offset {r.offset} delivered twice"
                read[r.offset] = r.value
    return read


def test_acks_all_survives_kill9_of_the_partition_leader(cluster_factory):
    cluster = cluster_factory(3, 3, **FAST)
    by_id = {b.node_id: b for b in cluster.brokers}
    first = replicated_topic(cluster, "replicated")
    old_leader = first.leader

    acked: dict[int, bytes] = {}
    failed: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    producer = Producer(
        cluster.bootstrap,
        acks=-1,
        linger_ms=2,
        delivery_timeout_ms=30000,
        request_timeout_ms=5000,
        retry_backoff_ms=100,
    )

    def remember(value: bytes):
        def done(future) -> None:
            with lock:
                if future.exception() is None:
                    acked[future.result().offset] = value
                else:
                    failed.append(str(future.exception()))

        return done

    def write() -> None:
        i = 0
        while not stop.is_set():
            producer.send("replicated", b"value-%08d" % i).add_done_callback(
                remember(b"value-%08d" % i)
            )
            i += 1
            time.sleep(0.001)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        eventually(lambda: len(acked) >= 300, 30, "acknowledged writes before the kill")
        by_id[old_leader].kill9()
        killed_at = len(acked)
        second = eventually(
            lambda: (
                (
                    p := partition_state(
                        next(b.address for b in cluster.brokers if b.node_id != old_leader),
                        "replicated",
                    )
                )
                and p.leader not in (-1, old_leader)
                and p
            ),
            30,
            "a new leader",
        )
        assert second.leader_epoch > first.leader_epoch and old_leader not in second.isr
        eventually(
            lambda: len(acked) >= killed_at + 300,
            60,
            f"acknowledged writes on the new leader (failures: {failed[-3:]})",
        )
    finally:
        stop.set()
        writer.join(30)
        producer.close(timeout=30)
    with lock:
        acknowledged = dict(acked)

    survivors = ",".join(b.address for b in cluster.brokers if b.node_id != old_leader)
    tp = TopicPartition("replicated", 0)
    read = read_all(survivors, tp, set(acknowledged))
    missing = sorted(o for o in acknowledged if o not in read)
    assert not missing, f"{len(missing)} acknowledged records lost, first at offset {missing[0]}"
    assert all(read[o] == v for o, v in acknowledged.items()), "a record changed at its offset"
    assert sorted(read) == list(range(len(read))), "offsets are not dense"
    values = list(read.values())
    assert len(values) == len(set(values)), "a value was stored twice"

    # The old leader comes back, truncates whatever it alone held, and rejoins the ISR.
    by_id[old_leader].spawn()
    by_id[old_leader].wait_started()
    eventually(
        lambda: (
            (p := partition_state(survivors.split(",")[0], "replicated")) and old_leader in p.isr
        ),
        30,
        f"broker {old_leader} back in the ISR",
    )
    logs = {}
    for b in cluster.brokers:
        log_dir = b.data_dir / "replicated-0"
        logs[b.node_id] = b"".join(p.read_bytes() for p in sorted(log_dir.glob("*.log")))
    # Every replica holds the same batches (whole segment bytes, as the leader wrote them).
    assert len(set(logs.values())) == 1, {k: len(v) for k, v in logs.items()}
