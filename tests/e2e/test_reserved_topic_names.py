"""Reserved topic names on a real node: `__cluster_metadata` (the metadata log's directory) and
the internal topics cannot be created by clients, by CreateTopics or by auto-creation, and the
node's topics survive a restart; the brokers still create `__consumer_offsets` themselves."""

from __future__ import annotations

import pytest

from clients.bridge import open_channel
from clients.errors import ErrorCode
from clients.wire import broker_pb2 as bpb
from clients.wire import broker_pb2_grpc, controller_pb2_grpc, group_pb2_grpc
from clients.wire import controller_pb2 as cpb
from clients.wire import group_pb2 as gpb

pytestmark = pytest.mark.e2e


def stubs(address: str):
    channel = open_channel(address)
    return (
        broker_pb2_grpc.BrokerStub(channel),
        controller_pb2_grpc.ControllerStub(channel),
        group_pb2_grpc.GroupStub(channel),
    )


def create(controller, name: str, internal: bool = False):
    return controller.CreateTopics(
        cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
            internal=internal,
        ),
        timeout=10,
    )


def topic_names(broker) -> list[str]:
    return [
        t.name for t in broker.Metadata(bpb.MetadataRequest(all_topics=True), timeout=10).topics
    ]


def test_clients_cannot_create_reserved_topics_and_topics_survive_a_restart(node):
    broker, controller, group = stubs(node.address)
    assert create(controller, "orders").topics[0].error_code == 0

    for name in ("__cluster_metadata", "__consumer_offsets", "__transaction_state"):
        answer = create(controller, name).topics[0]
        assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION, (name, answer)
        assert name in answer.error_message and "choose another name" in answer.error_message
        auto = broker.Metadata(
            bpb.MetadataRequest(topics=[name], allow_auto_topic_creation=True), timeout=10
        ).topics[0]
        assert auto.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (name, auto)
        assert "kraft topic create" not in auto.error_message
    refused = create(controller, "__consumer_offsets", internal=True)
    assert refused.error_code == ErrorCode.INVALID_REQUEST and "internal" in refused.error_message
    assert topic_names(broker) == ["orders"]

    # The group coordinators still create __consumer_offsets for themselves.
    found = group.FindCoordinator(gpb.FindCoordinatorRequest(key="g"), timeout=30)
    assert found.error_code == 0, found.error_message
    assert sorted(topic_names(broker)) == ["__consumer_offsets", "orders"]

    node.stop()
    node.start()
    broker, _, _ = stubs(node.address)
    assert sorted(topic_names(broker)) == ["__consumer_offsets", "orders"]
