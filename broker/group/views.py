"""Read-only answers from a coordinator's groups: OffsetFetch, ListGroups and DescribeGroups
(members, assignments, committed offsets and their lag); nothing here changes a group."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from broker.group.group import DEAD, STABLE, Group
from broker.group.messages import (
    CommittedOffset,
    DescribedGroup,
    DescribedMember,
    FetchedOffset,
    ListedGroup,
    ListGroupsResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from clients.errors import ErrorCode
from clients.group.protocol import PROTOCOL_TYPE, decode_assignment
from clients.types import TopicPartition


def offset_fetch(
    group: Group | None,
    req: OffsetFetchRequest,
    unavailable: ErrorCode | None,
    unstable: frozenset = frozenset(),
) -> OffsetFetchResponse:
    """A partition with no committed offset is answered -1 with no error, as Kafka does; with
    `req.require_stable`, one in `unstable` (offsets of a transaction not yet ended, or of a
    commit still being written) answers UNSTABLE_OFFSET_COMMIT: the offset in effect would
    send a new owner back over records that transaction may still commit as consumed."""
    if unavailable is not None:
        return OffsetFetchResponse(unavailable)
    offsets = group.offsets if group is not None else {}
    wanted = (
        sorted(offsets)
        if req.partitions is None
        else [TopicPartition(*tp) for tp in req.partitions]
    )
    answers = {}
    for tp in wanted:
        if req.require_stable and tp in unstable:
            answers[tp] = FetchedOffset(error=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            continue
        om = offsets.get(tp)
        answers[tp] = (
            FetchedOffset(om.offset, om.leader_epoch, om.metadata)
            if om is not None
            else FetchedOffset()
        )
    return OffsetFetchResponse(ErrorCode.NONE, answers)


def list_groups(
    groups: Iterable[Group], states: Iterable[str] | None, unavailable: ErrorCode | None
) -> ListGroupsResponse:
    """`states`: only groups in one of these (Kafka's ListGroups filter; names it does not
    know match nothing)."""
    if unavailable is not None:
        return ListGroupsResponse(unavailable)
    wanted = set(states) if states is not None else None
    return ListGroupsResponse(
        ErrorCode.NONE,
        tuple(
            ListedGroup(g.group_id, g.protocol_type or "", g.state)
            for g in sorted(groups, key=lambda g: g.group_id)
            if wanted is None or g.state in wanted
        ),
    )


def describe_group(
    group_id: str,
    group: Group | None,
    end_offsets: Mapping[TopicPartition, int] | None,
    unavailable: ErrorCode | None,
) -> DescribedGroup:
    """Members sorted by member id; their metadata and assignment only while Stable (during a
    rebalance they are in flux), as Kafka's GroupMetadata.summary does."""
    if unavailable is not None:
        return DescribedGroup(group_id, DEAD, unavailable)
    if group is None:
        return DescribedGroup(group_id, DEAD)
    stable = group.state == STABLE
    members = []
    for m in sorted(group.members.values(), key=lambda m: m.member_id):
        decoded = None
        if stable and group.protocol_type == PROTOCOL_TYPE:
            decoded = _partitions(m.assignment)
        members.append(
            DescribedMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(group.protocol_name) if stable else b"",
                m.assignment if stable else b"",
                decoded,
            )
        )
    offsets = []
    for tp, om in sorted(group.offsets.items()):
        end = (end_offsets or {}).get(tp)
        lag = None if end is None or om.offset < 0 else max(0, end - om.offset)
        offsets.append(CommittedOffset(tp, om.offset, om.leader_epoch, om.metadata, lag))
    return DescribedGroup(
        group_id,
        group.state,
        ErrorCode.NONE,
        group.protocol_type or "",
        (group.protocol_name or "") if stable else "",
        group.generation_id,
        group.leader_id or "",
        tuple(members),
        tuple(offsets),
    )


def _partitions(assignment: bytes) -> tuple[TopicPartition, ...] | None:
    try:
        return decode_assignment(assignment).partitions
    except Exception:  # a member's bytes that are not the consumer protocol: show them raw
        return None
