"""Kafka's clients in consumer groups on a real node's Kafka listener, the classic protocol:
FindCoordinator (the coordinator's Kafka address), JoinGroup with the MEMBER_ID_REQUIRED round,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch, with an idempotent producer
(InitProducerId) feeding them; what one client commits, another reads."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

pytestmark = pytest.mark.e2e


def produce(address: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": address, "enable.idempotence": True})
    for i in range(n):
        producer.produce(topic, key=b"%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0


def test_confluent_group_consumes_commits_and_kafka_python_reads_the_commit(node):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = f"g-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:8]}"
    produce(node.kafka_address, topic, 10)
    consumer = Consumer(
        {
            "bootstrap.servers": node.kafka_address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got, deadline = [], time.monotonic() + 60
    while len(got) < 10 and time.monotonic() < deadline:
        m = consumer.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    assert got == [b"v%d" % i for i in range(10)]
    consumer.commit(asynchronous=False)
    assert consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 10
    consumer.close()  # LeaveGroup

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    reader = KafkaConsumer(
        bootstrap_servers=node.kafka_address, group_id=group, enable_auto_commit=False
    )
    assert reader.committed(KTP(topic, 0)) == 10
    reader.close()


def test_kafka_python_group_resumes_from_its_commit(node):
    from kafka import KafkaConsumer

    topic, group = f"kg-{uuid.uuid4().hex[:8]}", f"kgrp-{uuid.uuid4().hex[:8]}"
    produce(node.kafka_address, topic, 6)

    def consume(limit: int) -> list:
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=node.kafka_address,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=10000,
            max_poll_records=limit,
        )
        out = []
        for m in consumer:
            out.append(m.value)
            if len(out) == limit:
                break
        consumer.commit()
        consumer.close()
        return out

    assert consume(3) == [b"v0", b"v1", b"v2"]
    assert consume(3) == [b"v3", b"v4", b"v5"]  # from the committed offset


def test_aiokafka_group_consumes_and_commits(node):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic, group = f"ag-{uuid.uuid4().hex[:8]}", f"agrp-{uuid.uuid4().hex[:8]}"
    produce(node.kafka_address, topic, 5)

    async def run():
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=node.kafka_address,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            got = []
            while len(got) < 5:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=2000), 30)
                got += [m.value for ms in batch.values() for m in ms]
            await consumer.commit()
            return got, await consumer.committed(TopicPartition(topic, 0))
        finally:
            await consumer.stop()

    got, committed = asyncio.run(run())
    assert got == [b"v%d" % i for i in range(5)] and committed == 5


def test_two_confluent_members_split_the_partitions(node, kraft):
    from confluent_kafka import Consumer

    topic, group = f"two-{uuid.uuid4().hex[:8]}", f"two-{uuid.uuid4().hex[:8]}"
    assert (
        kraft("topic", "create", topic, "-p", "2", "--bootstrap-server", node.address).returncode
        == 0
    )
    members = [
        Consumer(
            {
                "bootstrap.servers": node.kafka_address,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
            }
        )
        for _ in range(2)
    ]
    for m in members:
        m.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for m in members:
            m.poll(0.2)
        owned = [sorted(tp.partition for tp in m.assignment()) for m in members]
        if sorted(owned) == [[0], [1]]:
            break
    assert sorted(owned) == [[0], [1]]
    for m in members:
        m.close()
