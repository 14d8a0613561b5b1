"""Admin against the fake broker: topic lifecycle, configs, cluster description, offsets, and
error codes from the Controller service surfacing as KraftError naming the topic."""

from __future__ import annotations

import pathlib
import sys

import pytest

from clients.admin import Admin, AsyncAdmin, ConfigEntry, NewTopic, PartitionInfo, TopicDescription
from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer
from clients.types import TopicPartition

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()


async def test_topic_lifecycle(broker):
    async with AsyncAdmin(broker.address) as admin:
        await admin.create_topics([NewTopic("b", 2), NewTopic("a", 1, configs={"x": "1"})])
        await admin.create_topics([NewTopic("c", 3)], validate_only=True)
        assert await admin.list_topics() == ["a", "b"]
        desc = await admin.describe_topics(["b"])
        assert desc == [
            TopicDescription(
                "b", [PartitionInfo(0, 0, 0, [0], [0]), PartitionInfo(1, 0, 0, [0], [0])]
            )
        ]
        assert [d.name for d in await admin.describe_topics()] == ["a", "b"]
        await admin.create_partitions({"b": 4})
        assert len((await admin.describe_topics(["b"]))[0].partitions) == 4
        await admin.delete_topics(["a"])
        assert await admin.list_topics() == ["b"]


async def test_errors_name_the_topic(broker):
    broker.create("t")
    async with AsyncAdmin(broker.address) as admin:
        with pytest.raises(KraftError) as info:
            await admin.create_topics([NewTopic("t")])
        assert info.value.code == ErrorCode.TOPIC_ALREADY_EXISTS and "'t'" in info.value.message
        with pytest.raises(KraftError) as info:
            await admin.delete_topics(["ghost"])
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert "ghost" in info.value.message
        with pytest.raises(KraftError) as info:
            await admin.create_partitions({"t": 1})
        assert info.value.code == ErrorCode.INVALID_PARTITIONS
        with pytest.raises(KraftError) as info:
            await admin.describe_topics(["ghost"])
        assert "ghost" in info.value.message


async def test_configs(broker):
    async with AsyncAdmin(broker.address) as admin:
        await admin.create_topics([NewTopic("t", configs={"cleanup.policy": "compact"})])
        configs = await admin.describe_configs("t")
        assert configs["cleanup.policy"] == ConfigEntry(
            "cleanup.policy", "compact", False, False, "DYNAMIC_TOPIC_CONFIG"
        )
        await admin.alter_configs("t", set={"retention.ms": "5"}, delete=["cleanup.policy"])
        configs = await admin.describe_configs("t")
        assert configs["retention.ms"].value == "5" and "cleanup.policy" not in configs
        with pytest.raises(KraftError):
            await admin.describe_configs("ghost")


async def test_cluster_and_offsets(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address) as p:
        for i in range(3):
            await p.send("t", b"v", timestamp_ms=100 + i)
    async with AsyncAdmin(broker.address) as admin:
        info = await admin.describe_cluster()
        assert info == {
            "cluster_id": "fake-cluster",
            "controller_id": 0,
            "brokers": [{"id": 0, "host": "127.0.0.1", "port": broker.port, "rack": None}],
        }
        tp = TopicPartition("t", 0)
        assert await admin.list_offsets({tp: "earliest"}) == {tp: 0}
        assert await admin.list_offsets({tp: "latest"}) == {tp: 3}
        assert await admin.list_offsets({tp: 101}) == {tp: 1}
        assert await admin.list_offsets({tp: 999}) == {tp: -1}


async def test_unreachable_cluster_is_a_network_exception():
    async with AsyncAdmin("127.0.0.1:1", request_timeout_ms=500) as admin:
        with pytest.raises(KraftError) as info:
            await admin.list_topics()
    assert info.value.code == ErrorCode.NETWORK_EXCEPTION and "127.0.0.1:1" in info.value.message


def test_blocking_admin(broker):
    with Admin(broker.address) as admin:
        admin.create_topics([NewTopic("x", 2)])
        assert admin.list_topics() == ["x"]
        assert admin.describe_topics(["x"])[0].partitions[1].partition == 1
        admin.alter_configs("x", set={"a": "b"})
        assert admin.describe_configs("x")["a"].value == "b"
        assert admin.describe_cluster()["brokers"][0]["id"] == 0
        with pytest.raises(KraftError):
            admin.create_topics([NewTopic("x")])
