"""A compacted topic on a real node: the broker's cleaner keeps the last value of every key at the
offset it was acknowledged at, and drops older values, without touching the active segment."""

from __future__ import annotations

import time

import pytest

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e


def read_all(address: str, tp: TopicPartition, end: int) -> dict[int, tuple[bytes, bytes]]:
    out = {}
    with Consumer(address) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out or max(out) < end - 1):
            for r in consumer.poll(timeout_ms=300):
                out[r.offset] = (r.key, r.value)
    return out


def test_the_cleaner_keeps_the_last_value_per_key_at_its_offset(node_factory):
    node = node_factory(overrides=["log.cleaner.backoff.ms=200"]).start()
    with Admin(node.address) as admin:
        admin.create_topics(
            [
                NewTopic(
                    "latest",
                    num_partitions=1,
                    configs={
                        "cleanup.policy": "compact",
                        "segment.bytes": "2048",
                        "min.cleanable.dirty.ratio": "0.01",
                    },
                )
            ]
        )
    last: dict[bytes, tuple[int, bytes]] = {}
    with Producer(node.address, acks=1, linger_ms=0) as producer:
        for i in range(400):
            key, value = b"k%d" % (i % 10), b"v%04d" % i
            last[key] = (producer.send("latest", value, key=key).result().offset, value)
    end = max(offset for offset, _ in last.values()) + 1
    tp = TopicPartition("latest", 0)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        read = read_all(node.address, tp, end)
        if len(read) < 100:
            break
        time.sleep(0.5)
    assert len(read) < 100, f"nothing was compacted: {len(read)} of 400 records remain"
    for key, (offset, value) in last.items():
        assert read[offset] == (key, value), f"{key!r}: its last value is gone from offset {offset}"
    assert sorted(read) == sorted(set(read)) and all(
        a < b for a, b in zip(sorted(read), sorted(read)[1:])
    )
