"""Frozen dataclasses the GroupCoordinator takes and hands out: its config, the Group RPCs'
requests and responses (protobuf stays in the servicer), and the effects a driver carries out."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from clients.errors import ErrorCode
from clients.types import TopicPartition

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
NO_OFFSET = -1


@dataclass(frozen=True)
class GroupConfig:
    """Kafka's broker settings (names in PROPERTIES) and its constants, with Kafka's defaults."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    offset_metadata_max_bytes: int = 4_096
    # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member whose JoinGroup is parked
    # cannot heartbeat (it has no id yet); without this a client that gave up leaves a ghost.
    new_member_join_timeout_ms: int = 300_000
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3


PROPERTIES = {
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
}


# -- requests -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinGroupRequest:
    """`protocols`: (name, metadata) pairs, most preferred first. `rebalance_timeout_ms` is the
    consumer's max.poll.interval.ms: how long a member may take to rejoin a rebalance."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True


@dataclass(frozen=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)  # only the leader's counts


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class MemberIdentity:
    """A leaving member; an empty member_id with an instance id is an admin removing a static
    member."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True)
class OffsetCommitRequest:
    """generation_id -1 with no member id: a consumer outside group management (or an admin
    resetting offsets); allowed only while the group has no members."""

    group_id: str
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None


@dataclass(frozen=True)
class TxnOffsetCommitRequest:
    """Offsets committed inside the transaction of (producer_id, producer_epoch): written as a
    transactional batch, applied only when the transaction's COMMIT marker arrives. The
    consumer's group metadata (generation, member) is checked as OffsetCommit's is."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None


@dataclass(frozen=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None  # None: every committed partition
    require_stable: bool = False  # UNSTABLE_OFFSET_COMMIT where a transaction's are pending


# -- responses ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResponse:
    """Only the leader gets `members` (to run the assignor over); `skip_assignment` (KIP-814)
    tells a static leader that rejoined a stable group not to assign again."""

    error: ErrorCode = ErrorCode.NONE
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False
    message: str = ""


@dataclass(frozen=True)
class SyncGroupResponse:
    error: ErrorCode = ErrorCode.NONE
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None
    message: str = ""


@dataclass(frozen=True)
class HeartbeatResponse:
    error: ErrorCode = ErrorCode.NONE
    message: str = ""


@dataclass(frozen=True)
class LeaveGroupResponse:
    error: ErrorCode = ErrorCode.NONE
    members: tuple[tuple[MemberIdentity, ErrorCode], ...] = ()
    message: str = ""


@dataclass(frozen=True)
class OffsetCommitResponse:
    partitions: Mapping[TopicPartition, ErrorCode] = field(default_factory=dict)


@dataclass(frozen=True)
class FetchedOffset:
    offset: int = NO_OFFSET
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True)
class OffsetFetchResponse:
    error: ErrorCode = ErrorCode.NONE
    partitions: Mapping[TopicPartition, FetchedOffset] = field(default_factory=dict)


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class ListGroupsResponse:
    error: ErrorCode = ErrorCode.NONE
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True)
class DescribedMember:
    """`metadata` and `assignment` are filled only in the Stable state, as Kafka does;
    `assigned_partitions` is `assignment` decoded when the protocol type is "consumer"."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes = b""
    assignment: bytes = b""
    assigned_partitions: tuple[TopicPartition, ...] | None = None


@dataclass(frozen=True)
class CommittedOffset:
    partition: TopicPartition
    offset: int
    leader_epoch: int
    metadata: str
    lag: int | None = None  # None: the log end offset was not given


@dataclass(frozen=True)
class DescribedGroup:
    """An unknown group is described as Dead with no error, as Kafka does."""

    group_id: str
    state: str
    error: ErrorCode = ErrorCode.NONE
    protocol_type: str = ""
    protocol: str = ""
    generation_id: int = NO_GENERATION
    leader: str = ""
    members: tuple[DescribedMember, ...] = ()
    offsets: tuple[CommittedOffset, ...] = ()


# -- effects --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Respond:
    """Answer the request the driver tagged with `handle` (any hashable it chose)."""

    handle: Hashable
    response: Any


@dataclass(frozen=True)
class AppendRecords:
    """Append these (key, value) pairs, in order, to this coordinator's `__consumer_offsets`
    partition as leader with acks=all; once they are committed (or failed) call
    `on_append_result(append_id, error)`. Results must come back in append order.
    A producer id (>= 0) makes it a transactional batch of that producer and epoch
    (TxnOffsetCommit), which its transaction's end marker later commits or aborts."""

    append_id: int
    records: tuple[tuple[bytes, bytes | None], ...]
    producer_id: int = -1
    producer_epoch: int = -1


Effect = Union[Respond, AppendRecords]
