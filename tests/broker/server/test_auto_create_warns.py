"""A Metadata request that auto-creates a topic (a typo in a producer's topic name does) logs one
WARNING naming the topic and auto.create.topics.enable; a topic that exists logs nothing."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from broker.services.broker_servicer import BrokerServicer
from clients.errors import ErrorCode
from clients.wire import broker_pb2 as pb
from kraft.controller.messages import CreateTopicResult, CreateTopicsResponse


class FakeCluster:
    """The controller (CreateTopics) and the broker's metadata image in one: a topic exists once
    created; a second create of it answers TOPIC_ALREADY_EXISTS, as the controller does."""

    def __init__(self) -> None:
        self.topics: dict[str, object] = {}
        self.image = self

    def topic(self, name):
        return self.topics.get(name)

    def live_brokers(self):
        return []

    async def send_with_offset(self, request, timeout_s):
        results = []
        for t in request.topics:
            code = ErrorCode.TOPIC_ALREADY_EXISTS if t.name in self.topics else ErrorCode.NONE
            self.topics[t.name] = SimpleNamespace(partitions={}, topic_id="id-" + t.name)
            results.append(CreateTopicResult(t.name, code))
        return CreateTopicsResponse(tuple(results)), 1

    async def wait_for(self, ready, timeout_s):
        return ready(self)


def auto_create_warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "auto.create.topics.enable" in r.getMessage()
    ]


async def test_one_warning_per_auto_created_topic_naming_topic_and_setting(caplog):
    cluster = FakeCluster()
    servicer = BrokerServicer(None, cluster, cluster, cluster_id="c")
    request = pb.MetadataRequest(topics=["ordres"], allow_auto_topic_creation=True)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # the producer asks again and again; the topic is new only once
            await servicer.Metadata(request)
        await servicer.handlers.metadata.auto_create_topics(
            ["ordres"]
        )  # a racing request finds it already there
    [warning] = auto_create_warnings(caplog)
    assert "'ordres'" in warning and "auto.create.topics.enable=false" in warning


async def test_no_auto_create_and_no_warning_when_turned_off(caplog):
    cluster = FakeCluster()
    servicer = BrokerServicer(None, cluster, cluster, cluster_id="c", auto_create=False)
    with caplog.at_level(logging.WARNING):
        response = await servicer.Metadata(
            pb.MetadataRequest(topics=["ordres"], allow_auto_topic_creation=True)
        )
    assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert auto_create_warnings(caplog) == [] and cluster.topics == {}
