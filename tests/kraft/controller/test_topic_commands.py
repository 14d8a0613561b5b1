"""CreateTopics, DeleteTopics and CreatePartitions: defaults, the errors users meet (with
messages that say what to do), the records written, and validate_only writing nothing."""

from collections import Counter

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from kraft.metadata.records import ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord


def cluster(n=3, racks=None, **config):
    h = Harness(ControllerConfig(**config))
    h.add_brokers(range(1, n + 1), racks=racks)
    return h


def test_create_writes_topic_config_and_partition_records():
    h = cluster()
    n = len(h.log)
    result = h.create_topic("orders", partitions=2, rf=3, configs={"retention.ms": "1000"})
    assert result.error_code == 0 and len(result.topic_id) == 32
    kinds = [type(r) for r in h.log[n:]]
    assert kinds == [TopicRecord, ConfigRecord, PartitionRecord, PartitionRecord]
    for p in range(2):
        reg = h.partition("orders", p)
        assert reg.leader == reg.replicas[0] and reg.isr == reg.replicas and len(reg.replicas) == 3
        assert (reg.leader_epoch, reg.partition_epoch) == (0, 0)
    assert dict(h.image.topic_configs("orders")) == {"retention.ms": "1000"}


def test_minus_one_takes_the_configured_defaults():
    h = cluster(num_partitions=4, default_replication_factor=2)
    result = h.create_topic("orders", partitions=-1, rf=-1)
    assert (result.num_partitions, result.replication_factor) == (4, 2)
    assert len(h.image.topic("orders").partitions) == 4


def test_leaders_of_a_topic_spread_over_brokers():
    h = cluster(n=3)
    h.create_topic("orders", partitions=9, rf=2)
    assert set(
        Counter(
            tp.registration.leader
            for tp in [
                *h.image.partitions_led_by(1),
                *h.image.partitions_led_by(2),
                *h.image.partitions_led_by(3),
            ]
        ).values()
    ) == {3}


def test_replicas_go_to_distinct_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    h = cluster(n=6, racks=[racks[b] for b in range(1, 7)])
    h.create_topic("orders", partitions=6, rf=3)
    for p in range(6):
        assert {racks[b] for b in h.partition("orders", p).replicas} == {"a", "b", "c"}


def test_fenced_brokers_get_no_new_replicas():
    h = cluster(n=3)
    h.heartbeat(3, want_fence=True)
    h.create_topic("orders", partitions=4, rf=2)
    assert h.image.partitions_replicated_on(3) == []


@pytest.mark.parametrize(
    "topic, code, message",
    [
        (
            CreatableTopic("bad name!"),
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "has characters other than",
        ),
        (CreatableTopic(""), ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty"),
        (CreatableTopic("taken"), ErrorCode.TOPIC_ALREADY_EXISTS, "topic 'taken' already exists"),
        (
            CreatableTopic("tak.en"),
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "collides with existing topic 'tak_en'",
        ),
        (
            CreatableTopic("x", num_partitions=0),
            ErrorCode.INVALID_PARTITIONS,
            "0 partitions: use 1 to",
        ),
        (
            CreatableTopic("x", num_partitions=20_000),
            ErrorCode.INVALID_PARTITIONS,
            "use 1 to 10000",
        ),
        (
            CreatableTopic("x", replication_factor=0),
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "replication factor 0 must be at least 1",
        ),
        (
            CreatableTopic("x", replication_factor=3),
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "replication factor 3 is larger than the 2 available brokers",
        ),
        (
            CreatableTopic("x", configs={"retention.ms": "soon"}),
            ErrorCode.INVALID_CONFIG,
            "retention.ms: 'soon' is not a number",
        ),
        (
            CreatableTopic("x", configs={"retention.msec": "1"}),
            ErrorCode.INVALID_CONFIG,
            "did you mean 'retention.ms'?",
        ),
    ],
)
def test_create_errors(topic, code, message):
    h = cluster(n=3)
    h.create_topic("taken")
    h.create_topic("tak_en")
    h.heartbeat(3, want_fence=True)  # two live brokers left
    before = h.image
    result = h.controller.handle_create_topics(CreateTopicsRequest((topic,)), 0)
    out = result.response.topics[0]
    assert out.error_code == code and message in out.error_message, out
    assert result.records == [] and h.image is before


def test_one_bad_topic_does_not_stop_the_others():
    h = cluster()
    resp = h.call(
        "handle_create_topics",
        CreateTopicsRequest(
            (
                CreatableTopic("good"),
                CreatableTopic("bad/name"),
                CreatableTopic("dup"),
                CreatableTopic("dup"),
            )
        ),
    )
    assert [t.error_code for t in resp.topics] == [
        0,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    assert sorted(h.image.topics_by_name) == ["good"]


def test_validate_only_answers_without_records():
    h = cluster()
    result = h.controller.handle_create_topics(
        CreateTopicsRequest((CreatableTopic("orders", 3, 2),), validate_only=True), 0
    )
    assert result.records == [] and result.response.topics[0].error_code == 0
    assert result.response.topics[0].num_partitions == 3


def test_delete_removes_the_topic():
    h = cluster()
    topic_id = h.create_topic("orders").topic_id
    resp = h.call("handle_delete_topics", DeleteTopicsRequest(("orders", "orders")))
    assert [t.error_code for t in resp.topics] == [0, 0]
    assert h.log[-1] == RemoveTopicRecord(topic_id)
    assert sum(isinstance(r, RemoveTopicRecord) for r in h.log) == 1
    assert h.image.topic("orders") is None


def test_deleting_a_missing_topic_says_how_to_create_it():
    h = cluster()
    out = h.call("handle_delete_topics", DeleteTopicsRequest(("nope",))).topics[0]
    assert out.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (
        out.error_message == "topic 'nope' does not exist; create it with: kraft topic create nope"
    )


def test_deletion_can_be_switched_off():
    h = cluster(delete_topic_enable=False)
    h.create_topic("orders")
    out = h.call("handle_delete_topics", DeleteTopicsRequest(("orders",))).topics[0]
    assert (
        out.error_code == ErrorCode.POLICY_VIOLATION and "delete.topic.enable" in out.error_message
    )
    assert h.image.topic("orders") is not None


def test_create_partitions_adds_placed_partitions_with_the_topic_rf():
    h = cluster()
    h.create_topic("orders", partitions=2, rf=2)
    resp = h.call(
        "handle_create_partitions", CreatePartitionsRequest((CreatePartitionsTopic("orders", 5),))
    )
    assert resp.topics[0].error_code == 0
    parts = h.image.topic("orders").partitions
    assert sorted(parts) == [0, 1, 2, 3, 4]
    assert all(len(reg.replicas) == 2 and reg.leader == reg.replicas[0] for reg in parts.values())


@pytest.mark.parametrize(
    "name, count, code, message",
    [
        (
            "orders",
            2,
            ErrorCode.INVALID_PARTITIONS,
            "has 2 partitions; the new count must be larger",
        ),
        ("orders", 1, ErrorCode.INVALID_PARTITIONS, "got 1"),
        ("orders", 10_001, ErrorCode.INVALID_PARTITIONS, "up to 10000"),
        ("nope", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "kraft topic create nope"),
    ],
)
def test_create_partitions_errors(name, count, code, message):
    h = cluster()
    h.create_topic("orders", partitions=2, rf=1)
    result = h.controller.handle_create_partitions(
        CreatePartitionsRequest((CreatePartitionsTopic(name, count),)), 0
    )
    out = result.response.topics[0]
    assert out.error_code == code and message in out.error_message
    assert result.records == []


def test_create_partitions_needs_enough_live_brokers():
    h = cluster(n=3)
    h.create_topic("orders", partitions=1, rf=3)
    h.heartbeat(3, want_fence=True)
    out = h.call(
        "handle_create_partitions", CreatePartitionsRequest((CreatePartitionsTopic("orders", 2),))
    ).topics[0]
    assert out.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "replication factor 3 is larger than the 2 available brokers" in out.error_message


def test_a_recreated_topic_gets_a_new_id_and_no_old_configs():
    h = cluster()
    first = h.create_topic("orders", configs={"retention.ms": "5"}).topic_id
    h.call("handle_delete_topics", DeleteTopicsRequest(("orders",)))
    second = h.create_topic("orders").topic_id
    assert second != first and dict(h.image.topic_configs("orders")) == {}
