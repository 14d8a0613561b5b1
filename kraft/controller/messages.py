"""Requests and responses of the Controller service as frozen dataclasses; the wire codec
(broker/edge/controller_wire.py) maps them to protobuf. Error codes: clients.errors.ErrorCode."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kraft.security.acl import AclBinding, AclBindingFilter


# -- brokers
@dataclass(frozen=True)
class RegisterBrokerRequest:
    broker_id: int
    incarnation_id: str  # new on every process start: tells a restart from a duplicate
    host: str
    port: int
    rack: str | None = None
    # Every listener as "NAME://host:port" (Kafka's registration endpoints): followers dial the
    # inter-broker one, clients get the one they came in on. host/port is the first of them.
    listeners: tuple[str, ...] = ()


@dataclass(frozen=True)
class RegisterBrokerResponse:
    error_code: int = 0
    error_message: str = ""
    broker_epoch: int = -1
    controller_id: int = -1  # with NOT_CONTROLLER: the active controller (-1: not known)


@dataclass(frozen=True)
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int  # the broker's replayed metadata log offset
    want_fence: bool = False
    want_shutdown: bool = False
    # (topic_id, partition) replicas offline on this broker (a failed log dir, damaged files):
    # the controller moves their leadership away and keeps them out of ISRs.
    offline_replicas: tuple[tuple[str, int], ...] = ()
    # Brokers whose connections this broker saw refused or reset: the controller probes them.
    unreachable_brokers: tuple[int, ...] = ()


@dataclass(frozen=True)
class BrokerHeartbeatResponse:
    error_code: int = 0
    error_message: str = ""
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    controller_id: int = -1


# -- topics
@dataclass(frozen=True)
class CreatableTopic:
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...]
    validate_only: bool = False
    # A broker creating its own internal topic (__consumer_offsets); clients cannot set it.
    internal: bool = False


@dataclass(frozen=True)
class CreateTopicResult:
    name: str
    error_code: int = 0
    error_message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsResponse:
    topics: tuple[CreateTopicResult, ...]
    error_code: int = 0  # request-level: NOT_CONTROLLER comes with no results
    error_message: str = ""
    controller_id: int = -1


@dataclass(frozen=True)
class DeleteTopicsRequest:
    names: tuple[str, ...]


@dataclass(frozen=True)
class DeleteTopicResult:
    name: str
    error_code: int = 0
    error_message: str = ""
    topic_id: str = ""


@dataclass(frozen=True)
class DeleteTopicsResponse:
    topics: tuple[DeleteTopicResult, ...]
    error_code: int = 0  # request-level: NOT_CONTROLLER comes with no results
    error_message: str = ""
    controller_id: int = -1


@dataclass(frozen=True)
class CreatePartitionsTopic:
    name: str
    count: int  # the new total number of partitions


@dataclass(frozen=True)
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class CreatePartitionsResult:
    name: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class CreatePartitionsResponse:
    topics: tuple[CreatePartitionsResult, ...]
    error_code: int = 0  # request-level: NOT_CONTROLLER comes with no results
    error_message: str = ""
    controller_id: int = -1


# -- configs
@dataclass(frozen=True)
class ConfigResource:
    resource_type: str  # "topic"
    resource_name: str
    keys: tuple[str, ...] | None = None  # None: every key


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str
    is_default: bool
    source: str  # DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG


@dataclass(frozen=True)
class DescribeConfigsRequest:
    resources: tuple[ConfigResource, ...]


@dataclass(frozen=True)
class DescribeConfigsResult:
    resource_type: str
    resource_name: str
    error_code: int = 0
    error_message: str = ""
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True)
class DescribeConfigsResponse:
    results: tuple[DescribeConfigsResult, ...]
    error_code: int = 0  # request-level: NOT_CONTROLLER comes with no results
    error_message: str = ""
    controller_id: int = -1


class AlterConfigOpType(enum.IntEnum):
    # Kafka's numbering (IncrementalAlterConfigs).
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfigOp:
    name: str
    op: AlterConfigOpType
    value: str | None = None


@dataclass(frozen=True)
class AlterConfigsResource:
    resource_type: str
    resource_name: str
    ops: tuple[AlterConfigOp, ...]


@dataclass(frozen=True)
class IncrementalAlterConfigsRequest:
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class AlterConfigsResult:
    resource_type: str
    resource_name: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class IncrementalAlterConfigsResponse:
    results: tuple[AlterConfigsResult, ...]
    error_code: int = 0  # request-level: NOT_CONTROLLER comes with no results
    error_message: str = ""
    controller_id: int = -1


# -- producer ids
@dataclass(frozen=True)
class AllocateProducerIdsRequest:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AllocateProducerIdsResponse:
    error_code: int = 0
    error_message: str = ""
    producer_id_start: int = -1
    producer_id_len: int = 0
    controller_id: int = -1


# -- ISR changes from partition leaders
@dataclass(frozen=True)
class PartitionIsrChange:
    topic_id: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    # KIP-903: each member's broker epoch when the leader saw it caught up (-1 or absent: not
    # checked). A member that restarted since may have lost unflushed data: it must not join.
    new_isr_broker_epochs: tuple[int, ...] = ()


@dataclass(frozen=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    partitions: tuple[PartitionIsrChange, ...]


@dataclass(frozen=True)
class AlterPartitionResult:
    topic_id: str
    partition: int
    error_code: int = 0
    error_message: str = ""
    # The partition's state once the change commits (or as it is, on error).
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@dataclass(frozen=True)
class AlterPartitionResponse:
    error_code: int = 0
    error_message: str = ""
    partitions: tuple[AlterPartitionResult, ...] = ()
    controller_id: int = -1


# -- leader elections asked for by an admin
class ElectionType(enum.IntEnum):
    # Kafka's numbering (ElectLeaders).
    PREFERRED = 0  # the first replica, if it is live and in the ISR
    UNCLEAN = 1  # leaderless partitions only: an ISR member, else any live replica


@dataclass(frozen=True)
class ElectLeadersRequest:
    election_type: ElectionType
    partitions: tuple[tuple[str, int], ...] | None = None  # (topic, partition); None: all


@dataclass(frozen=True)
class ElectLeadersResult:
    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class ElectLeadersResponse:
    results: tuple[ElectLeadersResult, ...]
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1


# -- ACLs (Kafka's CreateAcls, DeleteAcls, DescribeAcls)
@dataclass(frozen=True)
class CreateAclsRequest:
    creations: tuple[AclBinding, ...]


@dataclass(frozen=True)
class AclCreationResult:
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class CreateAclsResponse:
    results: tuple[AclCreationResult, ...]  # one per creation, in order
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1


@dataclass(frozen=True)
class DeleteAclsRequest:
    filters: tuple[AclBindingFilter, ...]


@dataclass(frozen=True)
class DeleteAclsFilterResult:
    error_code: int = 0
    error_message: str = ""
    matching_acls: tuple[AclBinding, ...] = ()  # the bindings this filter deleted


@dataclass(frozen=True)
class DeleteAclsResponse:
    filter_results: tuple[DeleteAclsFilterResult, ...]
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1


@dataclass(frozen=True)
class DescribeAclsRequest:
    filters: tuple[AclBindingFilter, ...]  # bindings matching any of them


@dataclass(frozen=True)
class DescribeAclsResponse:
    acls: tuple[AclBinding, ...] = ()
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1


# -- SCRAM users (Kafka's AlterUserScramCredentials / DescribeUserScramCredentials)
@dataclass(frozen=True)
class ScramCredentialUpsertion:
    """The client salts and iterates the password; the controller never sees it."""

    name: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True)
class ScramCredentialDeletion:
    name: str
    mechanism: str


@dataclass(frozen=True)
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramCredentialDeletion, ...] = ()
    upsertions: tuple[ScramCredentialUpsertion, ...] = ()


@dataclass(frozen=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class AlterUserScramCredentialsResponse:
    results: tuple[AlterUserScramCredentialsResult, ...]
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1


@dataclass(frozen=True)
class DescribeUserScramCredentialsRequest:
    users: tuple[str, ...] = ()  # empty: every user


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str
    iterations: int


@dataclass(frozen=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str = ""
    credential_infos: tuple[ScramCredentialInfo, ...] = ()


@dataclass(frozen=True)
class DescribeUserScramCredentialsResponse:
    results: tuple[DescribeUserScramCredentialsResult, ...]
    error_code: int = 0
    error_message: str = ""
    controller_id: int = -1
