"""The Group service refuses requests outside broker/edge/request_limits.py before they reach
the coordinator: Kafka's error code, a message naming the field, nothing appended, and the group
still served afterwards."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from test_group_coordinators import GROUP, Broker, commit, join, stable_member

from broker.group.records import OFFSETS_TOPIC
from clients.errors import ErrorCode as E
from clients.wire import group_pb2 as pb

MIB = 1 << 20


def joined(**fields) -> pb.JoinGroupRequest:
    request = join()
    for name, value in fields.items():
        if name == "metadata":
            request.protocols[0].metadata = value
        else:
            setattr(request, name, value)
    return request


def bad_commit(**fields) -> pb.OffsetCommitRequest:
    request = commit("", -1, 5)
    for name, value in fields.items():
        if name == "group_id":
            request.group_id = value
        else:
            setattr(request.partitions[0], name, value)
    return request


@asynccontextmanager
async def coordinating(tmp_path):
    """A broker leading `__consumer_offsets`-0 with its coordinator loaded."""
    broker = Broker(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        yield broker
        nursery.cancel_scope.cancel()


REFUSED = [
    (
        "JoinGroup",
        joined(session_timeout_ms=-10_000, rebalance_timeout_ms=-10_000),
        E.INVALID_SESSION_TIMEOUT,
        "session_timeout_ms=-10000 is negative",
    ),
    (
        "JoinGroup",
        joined(rebalance_timeout_ms=-1),
        E.INVALID_REQUEST,
        "rebalance_timeout_ms=-1 is out of range",
    ),
    (
        "JoinGroup",
        joined(group_id="g" * MIB),
        E.INVALID_GROUP_ID,
        "group_id is 1048576 characters long; the limit is 249",
    ),
    ("JoinGroup", joined(member_id="m" * 300), E.INVALID_REQUEST, "member_id is 300 characters"),
    (
        "JoinGroup",
        joined(group_instance_id="not ok"),
        E.INVALID_REQUEST,
        "group_instance_id 'not ok' has characters other than",
    ),
    (
        "JoinGroup",
        joined(metadata=b"x" * (2 * MIB)),
        E.INVALID_REQUEST,
        "protocols.metadata total 2097157 bytes; the limit is 1048588",
    ),
    (
        "FindCoordinator",
        pb.FindCoordinatorRequest(key="g" * 250),
        E.INVALID_GROUP_ID,
        "key (the group id) is 250 characters long",
    ),
    (
        "Heartbeat",
        pb.HeartbeatRequest(group_id=GROUP, member_id="m" * 300),
        E.INVALID_REQUEST,
        "member_id is 300 characters long",
    ),
    (
        "OffsetCommit",
        bad_commit(group_id="g" * MIB),
        E.INVALID_GROUP_ID,
        "group_id is 1048576 characters long",
    ),
    (
        "OffsetCommit",
        bad_commit(partition=-1),
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "partition=-1 is negative; partitions are numbered from 0",
    ),
    (
        "OffsetCommit",
        bad_commit(topic="no such/topic"),
        E.INVALID_TOPIC_EXCEPTION,
        "has characters other than",
    ),
    ("OffsetCommit", bad_commit(offset=-5), E.INVALID_REQUEST, "offset=-5 is negative"),
    (
        "OffsetFetch",
        pb.OffsetFetchRequest(
            group_id=GROUP, partitions=[pb.TopicPartitionRef(topic="t", partition=-2)]
        ),
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "partition=-2 is negative",
    ),
]


@pytest.mark.parametrize(
    "rpc, request_pb, code, words", REFUSED, ids=[f"{r[0]}-{r[3][:30]}" for r in REFUSED]
)
async def test_refused_with_the_field_named_and_nothing_appended(
    tmp_path, autojump_clock, rpc, request_pb, code, words
):
    async with coordinating(tmp_path) as broker:
        answer = await getattr(broker.servicer, rpc)(request_pb)
        assert answer.error_code == code, answer.error_message
        assert words in answer.error_message
        assert len(answer.error_message) < 300  # a megabyte id is not echoed
        if rpc == "OffsetCommit":
            assert [p.error_code for p in answer.partitions] == [code]
        assert broker.replicas.get(OFFSETS_TOPIC, 0).log.log_end_offset == 0


async def test_an_assignment_past_the_record_limit_is_refused_and_the_group_goes_on(
    tmp_path, autojump_clock
):
    async with coordinating(tmp_path) as broker:
        member, generation = await stable_member(broker.servicer)
        huge = await broker.servicer.SyncGroup(
            pb.SyncGroupRequest(
                group_id=GROUP,
                generation_id=generation,
                member_id=member,
                assignments=[pb.MemberAssignment(member_id=member, assignment=b"x" * (2 * MIB))],
            )
        )
        assert huge.error_code == E.INVALID_REQUEST
        assert "assignments total" in huge.error_message
        assert "max.message.bytes" in huge.error_message
        answer = await broker.servicer.OffsetCommit(commit(member, generation, 42))
        assert [p.error_code for p in answer.partitions] == [0]


async def test_describe_and_delete_refuse_a_bad_group_id_alone(tmp_path, autojump_clock):
    async with coordinating(tmp_path) as broker:
        await stable_member(broker.servicer)
        described = await broker.servicer.DescribeGroups(
            pb.DescribeGroupsRequest(group_ids=["x" * 300, GROUP])
        )
        assert [g.error_code for g in described.groups] == [E.INVALID_GROUP_ID, 0]
        assert "group_id is 300 characters long" in described.groups[0].error_message
        deleted = await broker.servicer.DeleteGroups(pb.DeleteGroupsRequest(group_ids=[""]))
        assert deleted.groups[0].error_code == E.INVALID_GROUP_ID
        assert "group_id is empty" in deleted.groups[0].error_message


async def test_a_group_record_too_large_to_append_is_logged(tmp_path, autojump_clock, caplog):
    """Each subscription is within the limit, all of them together are not: the append fails,
    the members hear Kafka's code, and the log says why."""
    async with coordinating(tmp_path) as broker:
        first = await broker.servicer.JoinGroup(joined(metadata=b"a" * 700_000))
        second = await broker.servicer.JoinGroup(joined(metadata=b"b" * 700_000))
        answers = []

        async def rejoin(member_id: str) -> None:
            answers.append(
                await broker.servicer.JoinGroup(
                    joined(member_id=member_id, metadata=b"s" * 700_000)
                )
            )

        async with trio.open_nursery() as joins:
            joins.start_soon(rejoin, first.member_id)
            joins.start_soon(rejoin, second.member_id)
        leader = next(a for a in answers if a.leader == a.member_id)
        synced = await broker.servicer.SyncGroup(
            pb.SyncGroupRequest(
                group_id=GROUP,
                generation_id=leader.generation_id,
                member_id=leader.member_id,
                assignments=[
                    pb.MemberAssignment(member_id=a.member_id, assignment=b"p") for a in answers
                ],
            )
        )
        assert synced.error_code != 0
        assert synced.error_message
        assert any(
            "group records not appended" in r.getMessage() and "max.message.bytes" in r.getMessage()
            for r in caplog.records
        )
