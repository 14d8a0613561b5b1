"""Producer -> real node -> Consumer through the client library: every acknowledged record is read
back once, in order, at the offset its acknowledgement named, for every compression type."""

from __future__ import annotations

import collections
import time

import pytest

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e


def consume_all(address: str, tps: list[TopicPartition], expected: int, timeout_s: float = 60):
    got = []
    with Consumer(address, auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout_s
        while len(got) < expected and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout_ms=500))
    return got


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_acknowledged_record_is_read_back_at_its_offset(node, compression):
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("orders", num_partitions=3)])
    sent = []
    with Producer(node.address, acks=1, linger_ms=2, compression_type=compression) as producer:
        for i in range(3000):
            key = b"key-%d" % (i % 17)
            value = b"value-%06d" % i
            sent.append(
                (
                    key,
                    value,
                    producer.send("orders", value, key=key, headers=[("n", str(i).encode())]),
                )
            )
        producer.flush(timeout=30)
    acked = {}
    for key, value, future in sent:
        meta = future.result(timeout=0)
        acked[(meta.partition, meta.offset)] = (key, value)
    assert len(acked) == len(sent)  # no two records share an offset

    records = consume_all(node.address, [TopicPartition("orders", p) for p in range(3)], len(sent))

    assert len(records) == len(sent)
    for r in records:
        assert acked[(r.partition, r.offset)] == (r.key, r.value)
        assert r.headers and r.headers[0][0] == "n"
    by_partition = collections.defaultdict(list)
    for r in records:
        by_partition[r.partition].append(r.offset)
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # dense and in order
    keys_per_partition = collections.defaultdict(set)
    for r in records:
        keys_per_partition[r.key].add(r.partition)
    assert all(len(ps) == 1 for ps in keys_per_partition.values())  # a key sticks to a partition


def test_seek_to_end_and_offsets_for_times(node):
    with Producer(node.address, acks=1) as producer:
        for i in range(10):
            producer.send("times", b"v%d" % i, timestamp_ms=1_000_000 + i * 1000)
        producer.flush(timeout=30)
    tp = TopicPartition("times", 0)
    with Consumer(node.address) as consumer:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 10
        assert consumer.poll(timeout_ms=200) == []
        consumer.seek(tp, 4)
        first = consumer.poll(timeout_ms=5000)[0]
        assert (first.offset, first.value, first.timestamp) == (4, b"v4", 1_004_000)


def test_acks_0_records_arrive_without_offsets(node):
    with Producer(node.address, acks=0, linger_ms=1) as producer:
        futures = [producer.send("fire", b"v%d" % i) for i in range(500)]
        producer.flush(timeout=30)
    assert all(f.result(timeout=0).offset == -1 for f in futures)  # acks=0: no offset comes back
    records = consume_all(node.address, [TopicPartition("fire", 0)], 500)
    assert [r.value for r in records] == [b"v%d" % i for i in range(500)]
