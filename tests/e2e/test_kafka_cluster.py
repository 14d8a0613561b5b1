"""Kafka's clients against a 3-broker cluster's Kafka listeners: Metadata names every broker at
its own Kafka address, a producer with acks=all writes to partitions led by different brokers
(replication factor 3), and a consumer group reads them all, its coordinator found wherever it
is."""

from __future__ import annotations

import subprocess
import time

import pytest
from system_tools import require_tool

pytestmark = pytest.mark.e2e


def test_three_brokers_serve_kafka_clients(cluster_factory, kraft):
    require_tool("kcat")
    cluster = cluster_factory(controllers=1, brokers=3)
    kafka = {b.node_id: b.kafka_address for b in cluster.brokers}
    done = kraft(
        "topic", "create", "spread", "-p", "3", "-r", "3", "--bootstrap-server", cluster.bootstrap
    )
    assert done.returncode == 0, done.stderr
    listing = subprocess.run(
        ["kcat", "-b", kafka[2], "-L", "-t", "spread"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    for node_id, address in kafka.items():
        assert f"broker {node_id} at {address}" in listing
    leaders = {
        line.split("leader ")[1].split(",")[0]
        for line in listing.splitlines()
        if "partition" in line and "leader" in line
    }
    assert len(leaders) > 1, listing  # partitions led by more than one broker

    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": kafka[2], "acks": "all", "enable.idempotence": True})
    sent = {b"%d" % i for i in range(60)}
    for i, value in enumerate(sorted(sent)):
        producer.produce("spread", value=value, partition=i % 3)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": ",".join(kafka.values()),
            "group.id": "spread",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["spread"])
    got, deadline = set(), time.monotonic() + 90
    while got != sent and time.monotonic() < deadline:
        m = consumer.poll(1)
        if m is not None and m.error() is None:
            got.add(m.value())
    consumer.close()
    assert got == sent
