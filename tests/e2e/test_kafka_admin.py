"""Kafka's admin clients on a real node's Kafka listener: CreateTopics (with a config; again:
TOPIC_ALREADY_EXISTS; manual assignments refused) and DeleteTopics, by
confluent-kafka's AdminClient and kafka-python's KafkaAdminClient, seen by kraft's own CLI."""
from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.e2e


def test_confluent_admin_creates_and_deletes_topics(node, kraft):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": node.kafka_address})
    name = f"adm-{uuid.uuid4().hex[:8]}"
    for future in admin.create_topics([NewTopic(name, 3, 1,
                                                config={"retention.ms": "3600000"})]).values():
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
    manual = admin.create_topics([NewTopic(f"{name}-x", -1, -1, replica_assignments={0: [1]})],
                                 raise_errors=False)
    [topic] = manual.topics if hasattr(manual, "topics") else manual["topics"]
    assert (topic["error_code"] if isinstance(topic, dict) else topic[1]) == 39   # INVALID_REPLICA_ASSIGNMENT
    assert f"{name}-x" not in admin.list_topics()
    admin.close()
