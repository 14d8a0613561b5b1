"""A snapshot (an image written as records) replayed onto an empty image gives the same image,
including fenced brokers, leaderless partitions, configs and the next producer id."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kraft.metadata import records as r
from kraft.metadata.delta import replay_all
from kraft.metadata.image import EMPTY_IMAGE, TOPIC_RESOURCE
from kraft.metadata.snapshot import (
    decode_snapshot,
    encode_snapshot,
    image_to_records,
    records_to_image,
)


def busy_image():
    return replay_all(
        EMPTY_IMAGE,
        [
            r.RegisterBrokerRecord(1, "i1", 3, "h1", 9092, "r1", fenced=False),
            r.RegisterBrokerRecord(2, "i2", 4, "h2", 9093, None, fenced=True),
            r.TopicRecord("orders", "a" * 32),
            r.PartitionRecord("a" * 32, 0, (1, 2), (1, 2), 1),
            r.PartitionRecord("a" * 32, 1, (2, 1), (2,), 2),
            r.PartitionChangeRecord("a" * 32, 1, isr=(2,), leader=-1),
            r.TopicRecord("gone", "b" * 32),
            r.ConfigRecord(TOPIC_RESOURCE, "orders", "retention.ms", "100"),
            r.ConfigRecord("broker", "1", "log.retention.ms", "7"),
            r.RemoveTopicRecord("b" * 32),
            r.ProducerIdsRecord(1, 3, 2000),
        ],
        last_offset=41,
        epoch=5,
    )


def test_snapshot_records_rebuild_an_equal_image():
    image = busy_image()
    rebuilt = records_to_image(image_to_records(image), image.offset, image.epoch)
    assert rebuilt == image
    assert rebuilt.partition("orders", 1).leader_epoch == 1
    assert rebuilt.topic("gone") is None


def test_snapshot_survives_encoding():
    image = busy_image()
    assert decode_snapshot(encode_snapshot(image), 41, 5) == image


def test_an_empty_image_snapshots_to_no_records():
    assert image_to_records(EMPTY_IMAGE) == []
    assert records_to_image([], -1, -1) == EMPTY_IMAGE


def test_a_different_image_is_not_equal():
    image = busy_image()
    other = replay_all(image, [r.PartitionChangeRecord("a" * 32, 0, isr=(1,))])
    assert records_to_image(image_to_records(other), 41, 5) != image


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32))
def test_random_histories_round_trip(seed):
    rng = random.Random(seed)
    records = [
        r.RegisterBrokerRecord(b, f"i{b}", b, "h", 1, rng.choice([None, "x"]), rng.random() < 0.5)
        for b in range(3)
    ]
    topics = []
    for i in range(rng.randint(0, 5)):
        tid = f"{i:032x}"
        records.append(r.TopicRecord(f"t{i}", tid))
        topics.append(tid)
        for p in range(rng.randint(1, 3)):
            replicas = tuple(rng.sample(range(3), 2))
            records.append(r.PartitionRecord(tid, p, replicas, replicas, replicas[0]))
            for _ in range(rng.randint(0, 3)):
                records.append(
                    r.PartitionChangeRecord(
                        tid,
                        p,
                        isr=replicas[: rng.randint(1, 2)],
                        leader=rng.choice([None, -1, replicas[0]]),
                    )
                )
        if rng.random() < 0.3:
            records.append(r.ConfigRecord(TOPIC_RESOURCE, f"t{i}", "retention.ms", "1"))
        if rng.random() < 0.2:
            records.append(r.RemoveTopicRecord(tid))
    image = replay_all(EMPTY_IMAGE, records, last_offset=len(records) - 1, epoch=1)
    assert decode_snapshot(encode_snapshot(image), image.offset, image.epoch) == image
