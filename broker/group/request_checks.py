"""The Group requests checked before they reach a coordinator (limits and their reasons in
broker/edge/request_limits.py): a function per request that raises Refused. They read the
wire-neutral requests (broker/group/messages.py, broker/handlers/group_messages.py), so the
group handler runs them for every wire."""

from __future__ import annotations

from broker.edge.request_limits import (
    INT32_MAX,
    MAX_GROUP_RECORD_BYTES,
    MAX_NAME_LENGTH,
    MAX_PROTOCOLS,
    Refused,
    check_group_id,
    check_instance_id,
    check_length,
    check_member_id,
    check_not_negative,
    check_range,
    check_total_bytes,
)
from broker.group import messages as m
from clients.errors import ErrorCode
from clients.topics import topic_name_problem

E = ErrorCode
_RECORD_HINT = "the group's record in __consumer_offsets must fit the topic's max.message.bytes"


def _member(req) -> None:
    check_group_id(req.group_id)
    check_member_id(req.member_id)
    check_instance_id(req.group_instance_id)


def _partition(where: str, topic: str, partition: int) -> None:
    problem = topic_name_problem(topic)
    if problem:
        raise Refused(E.INVALID_TOPIC_EXCEPTION, f"{where}: {problem}")
    check_not_negative(
        f"{where}: partition",
        partition,
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "partitions are numbered from 0",
    )


def FindCoordinator(req) -> None:
    if req.key_type == 1:
        check_length("key (the transactional id)", req.key, MAX_NAME_LENGTH, required=True)
    elif req.key_type == 0:
        check_group_id(req.key, "key (the group id)")
    else:
        raise Refused(
            E.INVALID_REQUEST,
            f"key_type {req.key_type} is unknown; use 0 (group) or 1 (transaction)",
        )


def JoinGroup(req: m.JoinGroupRequest) -> None:
    _member(req)
    check_length("client_id", req.client_id, MAX_NAME_LENGTH)
    check_length("protocol_type", req.protocol_type, MAX_NAME_LENGTH)
    check_not_negative(
        "session_timeout_ms",
        req.session_timeout_ms,
        E.INVALID_SESSION_TIMEOUT,
        "set session.timeout.ms within the broker's group.min.session.timeout.ms"
        "..group.max.session.timeout.ms",
    )
    check_range(
        "rebalance_timeout_ms",
        req.rebalance_timeout_ms,
        0,
        INT32_MAX,
        hint="the consumer's max.poll.interval.ms",
    )
    if len(req.protocols) > MAX_PROTOCOLS:
        raise Refused(
            E.INVALID_REQUEST,
            f"protocols lists {len(req.protocols)} assignors; the limit is {MAX_PROTOCOLS}",
        )
    for name, _ in req.protocols:
        check_length("protocols.name", name, MAX_NAME_LENGTH)
    check_total_bytes(
        "protocols.metadata",
        (len(name) + len(metadata) for name, metadata in req.protocols),
        MAX_GROUP_RECORD_BYTES,
        hint=_RECORD_HINT,
    )


def SyncGroup(req: m.SyncGroupRequest) -> None:
    _member(req)
    check_length("protocol_type", req.protocol_type or "", MAX_NAME_LENGTH)
    check_length("protocol_name", req.protocol_name or "", MAX_NAME_LENGTH)
    for member_id in req.assignments:
        check_member_id(member_id, "assignments.member_id")
    check_total_bytes(
        "assignments",
        (len(member_id) + len(assignment) for member_id, assignment in req.assignments.items()),
        MAX_GROUP_RECORD_BYTES,
        hint=_RECORD_HINT + "; assign fewer partitions",
    )


def Heartbeat(req: m.HeartbeatRequest) -> None:
    _member(req)


def LeaveGroup(req: m.LeaveGroupRequest) -> None:
    check_group_id(req.group_id)
    for member in req.members:
        check_member_id(member.member_id, "members.member_id")
        check_instance_id(member.group_instance_id, "members.group_instance_id")


def OffsetCommit(req: m.OffsetCommitRequest | m.TxnOffsetCommitRequest) -> None:
    _member(req)
    for (topic, partition), o in req.offsets.items():
        where = f"partitions[{topic[:60]!r}, {partition}]"
        _partition(where, topic, partition)
        check_not_negative(
            f"{where}: offset", o.offset, hint="commit the next offset to consume, 0 or more"
        )
        check_range(f"{where}: leader_epoch", o.leader_epoch, -1, INT32_MAX, hint="-1 when unknown")


def TxnOffsetCommit(req: m.TxnOffsetCommitRequest) -> None:
    check_length("transactional_id", req.transactional_id, MAX_NAME_LENGTH)
    check_not_negative(
        "producer_id",
        req.producer_id,
        E.INVALID_PRODUCER_ID_MAPPING,
        "the producer id InitProducerId gave the transactional producer",
    )
    check_range(
        "producer_epoch",
        req.producer_epoch,
        0,
        32767,
        hint="the epoch InitProducerId gave the transactional producer",
    )
    OffsetCommit(req)


def OffsetFetch(req: m.OffsetFetchRequest) -> None:
    check_group_id(req.group_id)
    for topic, partition in req.partitions or ():
        _partition(f"partitions[{topic[:60]!r}, {partition}]", topic, partition)


def ListGroups(req) -> None:
    for state in req.states:
        check_length("states", state, MAX_NAME_LENGTH)


def group_id_problem(group_id: str) -> Refused | None:
    """For the requests answering per group (DescribeGroups, DeleteGroups)."""
    try:
        check_group_id(group_id)
    except Refused as refused:
        return refused
    return None
