"""A Kafka transactional producer (confluent-kafka) on a real node's Kafka listener:
InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit
and EndTxn. A read_committed consumer sees the committed records only, and the offsets sent to
the transaction are the group's once it commits."""

from __future__ import annotations

import time
import uuid

import pytest

pytestmark = pytest.mark.e2e


def test_committed_and_aborted_transactions_and_offsets_in_one(node):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = f"tx-{uuid.uuid4().hex[:8]}", f"txg-{uuid.uuid4().hex[:8]}"
    producer = Producer(
        {"bootstrap.servers": node.kafka_address, "transactional.id": f"txid-{topic}"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"c%d" % i)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"a%d" % i)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"c-last")
    member = Consumer({"bootstrap.servers": node.kafka_address, "group.id": group})
    producer.send_offsets_to_transaction(
        [TopicPartition(topic, 0, 3)], member.consumer_group_metadata(), 30
    )
    producer.commit_transaction(30)
    member.close()

    reader = Consumer(
        {
            "bootstrap.servers": node.kafka_address,
            "group.id": "reader",
            "isolation.level": "read_committed",
        }
    )
    reader.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        m = reader.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    assert got == [b"c0", b"c1", b"c2", b"c3", b"c4", b"c-last"]
    assert reader.poll(2) is None  # nothing of the aborted one, ever
    reader.close()
    committed = Consumer({"bootstrap.servers": node.kafka_address, "group.id": group})
    assert committed.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 3
    committed.close()
