"""The Controller service refuses requests outside their Kafka types before the controller sees
them: Kafka's error code, a message naming the field, and the command never run."""

from __future__ import annotations

import pytest

from broker.services.controller_servicer import ControllerServicer
from clients.errors import ErrorCode as E
from clients.wire import controller_pb2 as pb


def topic(**fields) -> pb.CreateTopicsRequest:
    return pb.CreateTopicsRequest(topics=[pb.CreatableTopic(**{"name": "t", **fields})])


def register(**fields) -> pb.RegisterBrokerRequest:
    return pb.RegisterBrokerRequest(
        **{"broker_id": 4, "incarnation_id": "i", "host": "h", "port": 9092, **fields}
    )


CASES = [
    (
        "CreateTopics",
        topic(replication_factor=40_000),
        E.INVALID_REPLICATION_FACTOR,
        "topic 't': replication_factor=40000 is out of range: use -1 to 32767",
    ),
    ("CreateTopics", topic(num_partitions=-5), E.INVALID_PARTITIONS, "num_partitions=-5"),
    (
        "CreateTopics",
        topic(configs={"retention.ms": "1" * 40_000}),
        E.INVALID_CONFIG,
        "retention.ms is 40000 characters long; the limit is 32767",
    ),
    (
        "CreatePartitions",
        pb.CreatePartitionsRequest(topics=[pb.CreatePartitionsTopic(name="t", count=-1)]),
        E.INVALID_PARTITIONS,
        "count=-1 is out of range",
    ),
    (
        "CreateTopics",
        pb.CreateTopicsRequest(
            topics=[pb.CreatableTopic(name=f"t{i}", num_partitions=4_000) for i in range(3)]
        ),
        E.INVALID_PARTITIONS,
        "creates 12000 partitions in all; the limit is 10000 per request",
    ),
    ("RegisterBroker", register(port=70_000), E.INVALID_REQUEST, "port=70000 is out of range"),
    ("RegisterBroker", register(host=""), E.INVALID_REQUEST, "host is empty"),
    ("RegisterBroker", register(host="h" * 300), E.INVALID_REQUEST, "host is 300 characters"),
    (
        "BrokerHeartbeat",
        pb.BrokerHeartbeatRequest(broker_id=4, unreachable_brokers=[2, -1]),
        E.INVALID_REQUEST,
        "unreachable_brokers=-1 is out of range",
    ),
    (
        "BrokerHeartbeat",
        pb.BrokerHeartbeatRequest(broker_id=4, unreachable_brokers=range(1_001)),
        E.INVALID_REQUEST,
        "names 1001 brokers; the limit is 1000",
    ),
    (
        "ElectLeaders",
        pb.ElectLeadersRequest(topic_partitions=[pb.TopicPartitions(topic="t", partitions=[-3])]),
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "t--3: partition=-3",
    ),
]


@pytest.mark.parametrize(
    "rpc, request_pb, code, words", CASES, ids=[f"{c[0]}-{c[3][:25]}" for c in CASES]
)
async def test_refused_before_the_controller_runs_it(rpc, request_pb, code, words):
    ran = []

    async def answer(request):
        ran.append(request)
        raise AssertionError("the controller must not see it")

    response = await getattr(ControllerServicer(answer), rpc)(request_pb)
    assert response.error_code == code and words in response.error_message, response
    assert response.metadata_offset == -1 and not ran
