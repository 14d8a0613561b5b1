"""Megabyte records through real processes: a 3-broker cluster, a topic with RF=3, a few 1 MB
values produced with acks=all and read back whole, in order; a value over the producer's
max_request_size is refused at send, naming the setting, and never reaches a broker."""

from __future__ import annotations

import pytest

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.errors import RecordTooLarge
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e

VALUES = [bytes([65 + i]) * 1_000_000 + b"%d" % i for i in range(4)]  # distinct, ~1 MB each


def test_one_megabyte_records_replicate_and_read_back_whole(cluster_factory):
    cluster = cluster_factory(1, 3)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics(
            [
                NewTopic(
                    "large",
                    num_partitions=1,
                    replication_factor=3,
                    configs={"min.insync.replicas": "3"},
                )
            ]
        )
    with Producer(cluster.bootstrap, acks="all", linger_ms=0) as producer:
        futures = [producer.send("large", value) for value in VALUES]
        with pytest.raises(RecordTooLarge, match="max_request_size=1048576"):
            producer.send("large", b"x" * (1 << 20))
        producer.flush()
        # min.insync.replicas=3: an acknowledgement means all three brokers hold the record.
        assert [f.result(timeout=60).offset for f in futures] == [0, 1, 2, 3]

    read = []
    with Consumer(cluster.bootstrap) as consumer:
        tp = TopicPartition("large", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        for _ in range(60):
            read += consumer.poll(timeout_ms=500)
            if len(read) >= len(VALUES):
                break
    assert [r.offset for r in read] == [0, 1, 2, 3]
    assert [r.value for r in read] == VALUES
