"""Kafka's admin clients on a real node's Kafka listener: ListGroups and DescribeGroups of a live
group, CreateTopics (with a config; again: TOPIC_ALREADY_EXISTS; manual assignments refused) and DeleteTopics, by
confluent-kafka's AdminClient and kafka-python's KafkaAdminClient, seen by kraft's own CLI."""

from __future__ import annotations

import time
import uuid

import pytest

pytestmark = pytest.mark.e2e


def test_confluent_admin_creates_and_deletes_topics(node, kraft):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": node.kafka_address})
    name = f"adm-{uuid.uuid4().hex[:8]}"
    for future in admin.create_topics(
        [NewTopic(name, 3, 1, config={"retention.ms": "3600000"})]
    ).values():
        assert future.result(30) is None
    assert len(admin.list_topics(timeout=10).topics[name].partitions) == 3
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    assert admin.delete_topics([name])[name].result(30) is None
    listed = kraft("topic", "list", "--bootstrap-server", node.address).stdout
    assert name not in listed


def test_kafka_python_admin_creates_and_deletes_topics(node):
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=node.kafka_address)
    name = f"kpadm-{uuid.uuid4().hex[:8]}"
    created = admin.create_topics([NewTopic(name, 2, 1)])
    [topic] = created.topics if hasattr(created, "topics") else created["topics"]
    assert (topic["error_code"] if isinstance(topic, dict) else topic[1]) == 0
    assert name in admin.list_topics()
    admin.delete_topics([name])
    assert name not in admin.list_topics()
    manual = admin.create_topics(
        [NewTopic(f"{name}-x", -1, -1, replica_assignments={0: [1]})], raise_errors=False
    )
    [topic] = manual.topics if hasattr(manual, "topics") else manual["topics"]
    assert (
        topic["error_code"] if isinstance(topic, dict) else topic[1]
    ) == 39  # INVALID_REPLICA_ASSIGNMENT
    assert f"{name}-x" not in admin.list_topics()
    admin.close()


def test_admin_clients_list_and_describe_a_live_group(node):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    topic, group = f"lg-{uuid.uuid4().hex[:8]}", f"lg-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": node.kafka_address})
    producer.produce(topic, value=b"x")
    assert producer.flush(30) == 0
    member = Consumer(
        {
            "bootstrap.servers": node.kafka_address,
            "group.id": group,
            "client.id": "the-member",
            "auto.offset.reset": "earliest",
        }
    )
    member.subscribe([topic])
    deadline = time.monotonic() + 60
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    assert member.assignment()
    try:
        admin = AdminClient({"bootstrap.servers": node.kafka_address})
        listed = admin.list_consumer_groups().result(30)
        assert group in {g.group_id for g in listed.valid}
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert str(described.state).endswith("STABLE")
        [m] = described.members
        assert m.client_id == "the-member"
        assert [tp.topic for tp in m.assignment.topic_partitions] == [topic]

        kp = KafkaAdminClient(bootstrap_servers=node.kafka_address)
        assert group in {g["group_id"] for g in kp.list_groups()}
        d = kp.describe_groups([group])[group]
        assert d["group_state"] == "Stable" and d["protocol_data"] == "range"
        [m] = d["members"]
        assert m["client_id"] == "the-member"
        assert m["member_assignment"]["assigned_partitions"] == [
            {"topic": topic, "partitions": [0]}
        ]
        kp.close()
    finally:
        member.close()


def test_describe_configs_of_a_topic(node):
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": node.kafka_address})
    name = f"cfg-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "3600000"})])[name].result(30)
    resource = ConfigResource("topic", name)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "3600000"
    assert not configs["retention.ms"].is_default
    assert "cleanup.policy" in configs


def test_create_partitions_and_delete_an_empty_group(node):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": node.kafka_address})
    name, group = f"grow-{uuid.uuid4().hex[:8]}", f"gone-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    admin.create_partitions([NewPartitions(name, 3)])[name].result(30)
    assert len(admin.list_topics(name, timeout=10).topics[name].partitions) == 3
    member = Consumer({"bootstrap.servers": node.kafka_address, "group.id": group})
    member.commit(offsets=[TopicPartition(name, 0, 1)], asynchronous=False)
    member.close()  # the group is empty now, with an offset: deletable
    admin.delete_consumer_groups([group])[group].result(30)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
