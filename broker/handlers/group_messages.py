"""The group handler's requests and answers that the group coordinator's own dataclasses
(broker/group/messages.py) do not cover: the requests answered outside one coordinator core
(FindCoordinator, ListGroups, DescribeGroups, DeleteGroups) and answers carrying the error message
of each part (OffsetCommit, OffsetFetch). Kafka's error codes; -1 where an answer has no value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.group import messages as m
from clients.types import TopicPartition

GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator key_type


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    key: str  # a group id, or a transactional id
    key_type: int = GROUP_KEY


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error_code: int = 0
    error_message: str = ""
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True, slots=True)
class PartitionError:
    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    """OffsetCommit's and TxnOffsetCommit's. `error_code`: set when every partition failed the
    same way for the whole request (NOT_COORDINATOR, an ACL, a bad field); each partition
    still carries its own."""

    partitions: tuple[PartitionError, ...]
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    offset: int = -1  # -1: none committed
    leader_epoch: int = -1
    metadata: str = ""
    error_code: int = 0  # UNSTABLE_OFFSET_COMMIT with require_stable


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    partitions: tuple[FetchedPartition, ...] = ()
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states: tuple[str, ...] = ()  # () : every state


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    coordinator: int


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    groups: tuple[ListedGroup, ...] = ()
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]
    include_offsets: bool = False  # the group's committed offsets and their lag too


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """`group`: what the coordinator describes (None when refused); `end_offsets`: the high
    watermarks this broker knows of the group's partitions (those it leads), for the lag."""

    group_id: str
    coordinator: int
    error_code: int = 0
    error_message: str = ""
    state: str = "Dead"
    group: m.DescribedGroup | None = None
    end_offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupResult:
    group_id: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    groups: tuple[GroupResult, ...]
