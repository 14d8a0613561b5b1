"""Admin's consumer-group calls against the fake broker and coordinator: list, describe (members,
partitions, offsets, lag), delete, and offsets altered only while the group is empty."""

from __future__ import annotations

import pathlib
import sys

import pytest
import trio

from clients.admin import AsyncAdmin, GroupListing, GroupOffset
from clients.consumer import AsyncConsumer
from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer
from clients.types import TopicPartition as TP

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from fake_group_coordinator import fake_cluster  # noqa: E402


@pytest.fixture
def fake():
    with fake_cluster(2) as pair:
        yield pair


async def test_groups_from_describe_to_delete(fake):
    broker, coordinator = fake
    async with AsyncProducer(broker.address, linger_ms=0) as p:
        for i in range(10):
            await p.send("t", b"x", partition=i % 2)
    async with AsyncAdmin(broker.address) as admin:
        assert await admin.list_groups() == []
        [ghost] = await admin.describe_groups(["ghost"])
        assert not ghost.exists and ghost.state == "Dead"
        await admin.alter_group_offsets("g", {TP("t", 0): 3})
        assert await admin.list_group_offsets("g") == {TP("t", 0): 3}
        async with AsyncConsumer(
            broker.address,
            group_id="g",
            client_id="me",
            session_timeout_ms=1000,
            heartbeat_interval_ms=50,
        ) as c:
            c.subscribe(["t"])
            with trio.fail_after(10):
                while len(c.assignment()) != 2:
                    await c.poll(timeout_ms=20)
            assert await admin.list_groups() == [GroupListing("g", "Stable", "consumer", 0)]
            [desc] = await admin.describe_groups(["g"])
            assert desc.exists and desc.state == "Stable" and desc.protocol == "range"
            [member] = desc.members
            assert member.client_id == "me" and member.partitions == (TP("t", 0), TP("t", 1))
            assert desc.offsets == (GroupOffset("t", 0, 3, 5, 2),)
            with pytest.raises(KraftError) as info:
                await admin.alter_group_offsets("g", {TP("t", 0): 0})
            assert "active members" in info.value.message and "'g'" in info.value.message
            with pytest.raises(KraftError) as info:
                await admin.delete_groups(["g"])
            assert info.value.code == ErrorCode.NON_EMPTY_GROUP
            assert "stop its consumers" in info.value.message
        [desc] = await admin.describe_groups(["g"], include_offsets=False)
        assert desc.state == "Empty" and desc.members == () and desc.offsets == ()
        await admin.delete_groups(["g"])
        assert await admin.list_groups() == []
        with pytest.raises(KraftError) as info:
            await admin.delete_groups(["g"])
        assert (
            info.value.code == ErrorCode.GROUP_ID_NOT_FOUND
            and "kraft group list" in info.value.message
        )
        with pytest.raises(ValueError):
            await admin.alter_group_offsets("g", {TP("t", 0): -1})


async def test_coordinator_errors_are_retried(fake):
    broker, coordinator = fake
    coordinator.errors["FindCoordinator"].append(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    coordinator.errors["OffsetCommit"].append(ErrorCode.NOT_COORDINATOR)
    coordinator.errors["OffsetFetch"].append(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    async with AsyncAdmin(broker.address) as admin:
        await admin.alter_group_offsets("g", {TP("t", 1): 7})
        assert await admin.list_group_offsets("g") == {TP("t", 1): 7}
    # A lookup fails, one more after NOT_COORDINATOR, one per admin call.
    assert coordinator.calls["FindCoordinator"] == 4
