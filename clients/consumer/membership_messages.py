"""The values Membership (membership.py) exchanges, as frozen dataclasses: its config, the requests
and other effects it asks the driver for, and the JoinGroup and SyncGroup answers fed back in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from clients.group.assignors import ASSIGNORS
from clients.group.protocol import NO_GENERATION
from clients.types import TopicPartition


@dataclass(frozen=True)
class MembershipConfig:
    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000  # also the rebalance timeout sent on JoinGroup
    assignors: tuple[str, ...] = ("range", "sticky")
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if not self.group_id:
            raise ValueError("group_id must not be empty")
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(
                f"partition_assignment_strategy {list(self.assignors)!r}: choose "
                f"from {', '.join(sorted(ASSIGNORS))}"
            )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                "heartbeat_interval_ms must be lower than session_timeout_ms "
                f"({self.heartbeat_interval_ms} >= {self.session_timeout_ms})"
            )


# -- requests out -------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinGroup:
    member_id: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None


@dataclass(frozen=True)
class SyncGroup:
    generation: int
    member_id: str
    group_instance_id: str | None
    protocol_name: str
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Heartbeat:
    generation: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True)
class LeaveGroup:
    member_id: str


# -- other effects ------------------------------------------------------------------------------
@dataclass(frozen=True)
class NeedPartitionCounts:
    """The leader's assignor needs {topic: partition count}: answer with on_partition_counts."""

    generation: int
    topics: tuple[str, ...]


@dataclass(frozen=True)
class Revoke:
    """Run the revocation callback (committing first unless `lost`), then call `revoked`."""

    partitions: tuple[TopicPartition, ...]
    lost: bool = False


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]
    generation: int


@dataclass(frozen=True)
class CoordinatorUnknown:
    reason: str


@dataclass(frozen=True)
class Fatal:
    code: int
    message: str


Effect = Union[
    JoinGroup,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    NeedPartitionCounts,
    Revoke,
    Assign,
    CoordinatorUnknown,
    Fatal,
]


# -- answers in ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str = ""
    generation: int = NO_GENERATION
    protocol_name: str = ""
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    message: str = ""
    skip_assignment: bool = False  # a static leader's rejoin: the group keeps its plan


@dataclass(frozen=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    message: str = ""
