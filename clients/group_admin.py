"""The admin client's consumer-group calls (Kafka's listConsumerGroups, describeConsumerGroups,
deleteConsumerGroups, list/alterConsumerGroupOffsets): each asks the group's coordinator."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import trio

from clients import bridge
from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError
from clients.group_rpc import CoordinatorClient, deadline_after, group_stub
from clients.list_offsets import list_offsets
from clients.types import TopicPartition
from clients.wire import broker_pb2, group_pb2

E = ErrorCode
# What the coordinator answers a commit from outside the group while members are active.
LATEST = -1  # ListOffsets: the latest offset
_GROUP_ACTIVE = frozenset({E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS})


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    protocol_type: str
    coordinator: int


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupOffset:
    topic: str
    partition: int
    offset: int
    log_end_offset: int | None  # None: unknown
    lag: int | None
    metadata: str = ""


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str
    generation: int
    leader: str
    coordinator: int
    members: tuple[MemberDescription, ...]
    offsets: tuple[GroupOffset, ...]

    @property
    def exists(self) -> bool:
        return not (self.state == "Dead" and not self.members and not self.offsets)


async def ask_every_broker(cluster: Cluster, timeout_s: float, call, what: str) -> list:
    """`call(broker)` (-> (answer, error code, message)) on every broker at once, each retried
    while it is still loading (COORDINATOR_LOAD_IN_PROGRESS); returns [(broker, answer)], or
    raises naming every broker that failed: a listing must not silently miss some."""
    resp = await cluster.call_any("Metadata", broker_pb2.MetadataRequest())
    cluster.metadata.update(resp)
    brokers = sorted(cluster.metadata.brokers.values(), key=lambda b: b.node_id)
    answers: list = []
    errors: list[str] = []
    give_up = trio.current_time() + timeout_s

    async def ask(broker) -> None:
        while True:
            try:
                answer, code, message = await call(broker)
            except KraftError as exc:
                answer, code, message = None, exc.code, exc.message
            if not code:
                answers.append((broker, answer))
                return
            if code != E.COORDINATOR_LOAD_IN_PROGRESS or trio.current_time() > give_up:
                errors.append(f"broker {broker.node_id} ({broker.address}): {message or code}")
                return
            await trio.sleep(0.1)

    async with trio.open_nursery() as nursery:
        for b in brokers:
            nursery.start_soon(ask, b)
    if errors:
        raise KraftError(
            E.COORDINATOR_NOT_AVAILABLE,
            f"could not list the {what} of every broker: " + "; ".join(errors),
        )
    return sorted(answers, key=lambda a: a[0].node_id)


async def list_groups(
    cluster: Cluster, timeout_s: float, states: list[str] | None = None
) -> list[GroupListing]:
    """Every broker coordinates some groups: ask each, merge, sort by group id."""
    req = group_pb2.ListGroupsRequest(states=list(states or ()))

    async def call(broker):
        answer = await bridge.call(
            group_stub(cluster, broker.address).ListGroups, req, cluster.timeout
        )
        return answer, answer.error_code, answer.error_message

    found: dict[str, GroupListing] = {}
    for broker, answer in await ask_every_broker(cluster, timeout_s, call, "groups"):
        for g in answer.groups:
            found[g.group_id] = GroupListing(
                g.group_id, g.state, g.protocol_type, g.coordinator or broker.node_id
            )
    return [found[g] for g in sorted(found)]


async def describe_group(
    cluster: Cluster, group_id: str, include_offsets: bool, timeout_s: float
) -> GroupDescription:
    rpc = CoordinatorClient(cluster, group_id)
    req = group_pb2.DescribeGroupsRequest(group_ids=[group_id], include_offsets=include_offsets)
    resp = await rpc.call_retrying(
        "DescribeGroups",
        req,
        deadline_after(timeout_s),
        error_of=lambda r: r.groups[0].error_code if r.groups else 0,
    )
    if not resp.groups:
        raise KraftError(E.UNKNOWN_SERVER_ERROR, f"group '{group_id}': empty DescribeGroups answer")
    g = resp.groups[0]
    if g.error_code:
        raise KraftError(g.error_code, f"group '{group_id}': {g.error_message}")
    members = tuple(
        MemberDescription(
            m.member_id,
            m.group_instance_id if m.HasField("group_instance_id") else None,
            m.client_id,
            m.client_host,
            tuple(sorted(TopicPartition(p.topic, p.partition) for p in m.assigned_partitions)),
        )
        for m in g.members
    )
    offsets = tuple(
        GroupOffset(
            o.topic,
            o.partition,
            o.offset,
            o.log_end_offset if o.log_end_offset >= 0 else None,
            o.lag if o.lag >= 0 else None,
            o.metadata,
        )
        for o in sorted(g.offsets, key=lambda o: (o.topic, o.partition))
    )
    if include_offsets:
        offsets = await _with_log_ends(cluster, offsets)
    return GroupDescription(
        g.group_id or group_id,
        g.state,
        g.protocol_type,
        g.protocol,
        g.generation_id,
        g.leader,
        g.coordinator,
        members,
        offsets,
    )


async def _with_log_ends(
    cluster: Cluster, offsets: tuple[GroupOffset, ...]
) -> tuple[GroupOffset, ...]:
    """The coordinator knows the log end only of the partitions it leads: ask the leaders of
    the rest (the latest offset, i.e. the high watermark). Where even they cannot say (a deleted
    topic, no leader right now) the lag stays unknown rather than failing the description."""
    missing = [TopicPartition(o.topic, o.partition) for o in offsets if o.log_end_offset is None]
    if not missing:
        return offsets
    try:
        ends = {
            tp: found[0]
            for tp, found in (await list_offsets(cluster, {tp: LATEST for tp in missing})).items()
        }
    except KraftError:
        # A leader just moved (or a topic is gone): with fresh metadata, one at a time, so one
        # partition's failure does not hide the others.
        ends = {}
        try:
            await cluster.refresh(sorted({tp.topic for tp in missing}))
        except KraftError:
            pass
        for tp in missing:
            try:
                ends[tp] = (await list_offsets(cluster, {tp: LATEST}))[tp][0]
            except KraftError:
                continue
    return tuple(
        o
        if TopicPartition(o.topic, o.partition) not in ends
        else dataclasses.replace(
            o,
            log_end_offset=ends[TopicPartition(o.topic, o.partition)],
            lag=max(0, ends[TopicPartition(o.topic, o.partition)] - o.offset),
        )
        for o in offsets
    )


async def delete_group(cluster: Cluster, group_id: str, timeout_s: float) -> None:
    rpc = CoordinatorClient(cluster, group_id)
    req = group_pb2.DeleteGroupsRequest(group_ids=[group_id])
    resp = await rpc.call_retrying(
        "DeleteGroups",
        req,
        deadline_after(timeout_s),
        error_of=lambda r: r.groups[0].error_code if r.groups else 0,
    )
    code = resp.groups[0].error_code if resp.groups else E.UNKNOWN_SERVER_ERROR
    if code == E.NON_EMPTY_GROUP:
        raise KraftError(
            code,
            f"group '{group_id}' has active members; stop its consumers "
            f"first (see: kraft group describe {group_id})",
        )
    if code == E.GROUP_ID_NOT_FOUND:
        raise KraftError(code, f"group '{group_id}' does not exist (see: kraft group list)")
    if code:
        message = resp.groups[0].error_message if resp.groups else ""
        raise KraftError(code, f"group '{group_id}': {message}".rstrip(": "))


async def list_group_offsets(
    cluster: Cluster, group_id: str, timeout_s: float
) -> dict[TopicPartition, int]:
    got = await CoordinatorClient(cluster, group_id).fetch_offsets(None, deadline_after(timeout_s))
    return {tp: o for tp, o in sorted(got.items()) if o is not None}


async def alter_group_offsets(
    cluster: Cluster, group_id: str, offsets: dict, timeout_s: float
) -> None:
    """Commit `offsets` from outside the group (generation -1, no member id): the coordinator
    takes it only while the group has no members, as Kafka's."""
    offsets = {TopicPartition(*tp): int(o) for tp, o in offsets.items()}
    bad = [f"{tp.topic}-{tp.partition}: {o}" for tp, o in offsets.items() if o < 0]
    if bad:
        raise ValueError(f"offsets must be 0 or more ({', '.join(bad)})")
    try:
        await CoordinatorClient(cluster, group_id).commit_offsets(
            offsets, -1, "", None, deadline_after(timeout_s)
        )
    except KraftError as exc:
        if exc.code in _GROUP_ACTIVE:
            raise KraftError(
                exc.code,
                f"group '{group_id}' has active members: its offsets can "
                "only be changed while it is empty; stop its consumers first "
                f"(see: kraft group describe {group_id})",
            ) from None
        raise


__all__ = [
    "GroupDescription",
    "GroupListing",
    "GroupOffset",
    "MemberDescription",
    "alter_group_offsets",
    "delete_group",
    "describe_group",
    "list_group_offsets",
    "list_groups",
]
