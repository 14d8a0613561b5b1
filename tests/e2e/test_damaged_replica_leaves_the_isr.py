"""A segment deleted from a stopped leader's replica (real processes: 1 controller, 3 brokers,
RF=3): at restart that replica goes offline instead of serving a hole, its broker's heartbeat
reports it and it stays out of the ISR while the same broker's healthy replica rejoins; every
acknowledged record is still read back, densely, from the new leader; nothing was cut."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from test_replication_failover import FAST
from waiting import eventually

from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition
from clients.wire import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.e2e

RECORDS = 120


def _partitions(kraft, bootstrap):
    done = kraft("topic", "describe", "ledger", "--format", "json", "--bootstrap-server", bootstrap)
    return (
        {p["partition"]: p for p in json.loads(done.stdout)["partitions"]}
        if done.returncode == 0
        else None
    )


def _offline_replicas(address: str, partition: int) -> list[int]:
    with grpc.insecure_channel(address) as channel:
        resp = broker_pb2_grpc.BrokerStub(channel).Metadata(
            broker_pb2.MetadataRequest(topics=["ledger"]), timeout=5
        )
    return list(resp.topics[0].partitions[partition].offline_replicas)


def test_a_deleted_segment_takes_the_replica_offline_and_out_of_the_isr(cluster_factory, kraft):
    cluster = cluster_factory(1, 3, **FAST)
    created = kraft(
        "topic",
        "create",
        "ledger",
        "-p",
        "2",
        "-r",
        "3",
        "-c",
        "segment.bytes=1024",
        "--bootstrap-server",
        cluster.bootstrap,
    )
    assert created.returncode == 0, created.stderr
    eventually(
        lambda: (
            (d := _partitions(kraft, cluster.bootstrap))
            and all(len(p["isr"]) == 3 for p in d.values())
        ),
        30,
        "a full ISR",
    )
    sent = []
    with Producer(cluster.bootstrap, acks=-1) as producer:
        for i in range(0, RECORDS, 10):  # small batches: several segments each
            sent += [
                producer.send("ledger", b"record-%03d" % j, partition=p)
                for p in (0, 1)
                for j in range(i, i + 10)
            ]
            producer.flush(30)
    assert [f.exception() for f in sent if f.exception() is not None] == []
    victim_id = _partitions(kraft, cluster.bootstrap)[0]["leader"]
    victim = next(b for b in cluster.brokers if b.node_id == victim_id)
    victim.stop()
    replica = victim.data_dir / "ledger-0"
    segments = sorted(replica.glob("*.log"))
    assert len(segments) >= 3, segments
    segments[1].unlink()
    victim.spawn()
    victim.wait_started()
    # The healthy replica on the same broker rejoins; the damaged one does not.
    eventually(
        lambda: victim_id in (_partitions(kraft, cluster.bootstrap) or {1: {"isr": []}})[1]["isr"],
        30,
        "the healthy replica back in the ISR",
    )
    time.sleep(2)
    damaged = _partitions(kraft, cluster.bootstrap)[0]
    assert victim_id not in damaged["isr"] and damaged["leader"] not in (victim_id, -1), damaged
    # Metadata names the replica offline (Kafka's offline_replicas), the healthy one not.
    assert victim_id in _offline_replicas(cluster.brokers[0].address, 0)
    assert victim_id not in _offline_replicas(cluster.brokers[0].address, 1)
    log = victim.log_path.read_text()
    assert "replica ledger-0 is offline" in log and "are missing" in log
    assert len(sorted(replica.glob("*.log"))) == len(segments) - 1  # nothing was cut
    tp = TopicPartition("ledger", 0)
    with Consumer(cluster.bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < RECORDS and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout_ms=500))
    assert [r.offset for r in got] == list(range(RECORDS))
    assert [r.value for r in got] == [b"record-%03d" % i for i in range(RECORDS)]
