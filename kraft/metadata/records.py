"""The metadata log's records: frozen dataclasses, each stored as one msgpack map
{"type": <name>, "version": <int>, ...fields}, with encode() and decode()."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import msgpack

NO_LEADER = -1


class MetadataRecordError(ValueError):
    """Bytes that are not a metadata record this version of kraft understands."""


@dataclass(frozen=True)
class RegisterBrokerRecord:
    """A broker (re)registered; a new registration always starts fenced."""

    TYPE: ClassVar[str] = "RegisterBroker"
    VERSION: ClassVar[int] = 0
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = True
    listeners: tuple[str, ...] = ()  # "NAME://host:port"; empty: host/port only


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord:
    """Fence or unfence a broker registered with `broker_epoch`, or (when `offline_replicas` is
    set) replace the set of its replicas that are offline: (topic_id, partition) pairs whose log
    dir failed or whose files are damaged. A new registration starts with none offline."""

    TYPE: ClassVar[str] = "BrokerRegistrationChange"
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int
    fenced: bool
    offline_replicas: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class UnregisterBrokerRecord:
    TYPE: ClassVar[str] = "UnregisterBroker"
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class TopicRecord:
    TYPE: ClassVar[str] = "Topic"
    VERSION: ClassVar[int] = 0
    name: str
    topic_id: str


@dataclass(frozen=True)
class PartitionRecord:
    """A partition's full state: written when it is created and in snapshots."""

    TYPE: ClassVar[str] = "Partition"
    VERSION: ClassVar[int] = 0
    topic_id: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass(frozen=True)
class PartitionChangeRecord:
    """Changes to one partition; None leaves a field as it is. Replay bumps partition_epoch,
    and leader_epoch too whenever `leader` is set (followers truncate by leader epoch)."""

    TYPE: ClassVar[str] = "PartitionChange"
    VERSION: ClassVar[int] = 0
    topic_id: str
    partition: int
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    replicas: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RemoveTopicRecord:
    TYPE: ClassVar[str] = "RemoveTopic"
    VERSION: ClassVar[int] = 0
    topic_id: str


@dataclass(frozen=True)
class ConfigRecord:
    """Set (or, with value None, delete) one config override of a resource."""

    TYPE: ClassVar[str] = "Config"
    VERSION: ClassVar[int] = 0
    resource_type: str  # "topic" or "broker"
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class ProducerIdsRecord:
    """A block of producer ids went to a broker; ids below next_producer_id are taken."""

    TYPE: ClassVar[str] = "ProducerIds"
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True)
class AccessControlEntryRecord:
    """An ACL binding was created (Kafka's record; enums as Kafka's numbers, see
    kraft/security/acl.py); `id` names it for RemoveAccessControlEntryRecord."""

    TYPE: ClassVar[str] = "AccessControlEntry"
    VERSION: ClassVar[int] = 0
    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class RemoveAccessControlEntryRecord:
    TYPE: ClassVar[str] = "RemoveAccessControlEntry"
    VERSION: ClassVar[int] = 0
    id: str


@dataclass(frozen=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism (Kafka's record): never the password, only
    what verifies a proof of it."""

    TYPE: ClassVar[str] = "UserScramCredential"
    VERSION: ClassVar[int] = 0
    name: str
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class RemoveUserScramCredentialRecord:
    TYPE: ClassVar[str] = "RemoveUserScramCredential"
    VERSION: ClassVar[int] = 0
    name: str
    mechanism: str


@dataclass(frozen=True)
class LeaderChangeRecord:
    """Written by a new Raft leader to commit its epoch; no metadata changes."""

    TYPE: ClassVar[str] = "LeaderChange"
    VERSION: ClassVar[int] = 0
    leader_id: int
    leader_epoch: int
    voters: tuple[int, ...] = ()


@dataclass(frozen=True)
class NoOpRecord:
    """Advances the log (and so the high watermark) without changing metadata."""

    TYPE: ClassVar[str] = "NoOp"
    VERSION: ClassVar[int] = 0


MetadataRecord = (
    RegisterBrokerRecord
    | BrokerRegistrationChangeRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | RemoveTopicRecord
    | ConfigRecord
    | ProducerIdsRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
    | LeaderChangeRecord
    | NoOpRecord
)

RECORD_TYPES: dict[str, type] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        BrokerRegistrationChangeRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
        ProducerIdsRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        UserScramCredentialRecord,
        RemoveUserScramCredentialRecord,
        LeaderChangeRecord,
        NoOpRecord,
    )
}

# Fields msgpack hands back as lists; tuples keep records hashable and comparable.
_TUPLE_FIELDS = frozenset({"replicas", "isr", "voters", "listeners"})


def encode(record: MetadataRecord) -> bytes:
    cls = type(record)
    if RECORD_TYPES.get(getattr(cls, "TYPE", None)) is not cls:
        raise MetadataRecordError(f"{cls.__name__} is not a metadata record type")
    body = {"type": cls.TYPE, "version": cls.VERSION}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        body[f.name] = _plain(value)
    return msgpack.packb(body, use_bin_type=True)


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def decode(data: bytes) -> MetadataRecord:
    try:
        body = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise MetadataRecordError(f"metadata record is not valid msgpack: {exc}") from None
    if not isinstance(body, dict):
        raise MetadataRecordError(f"metadata record is a {type(body).__name__}, not a map")
    name = body.pop("type", None)
    cls = RECORD_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise MetadataRecordError(
            f"unknown metadata record type {name!r}; known types: {', '.join(sorted(RECORD_TYPES))}"
            " (a newer kraft may have written it; upgrade this node)"
        )
    version = body.pop("version", None)
    if version != cls.VERSION:
        raise MetadataRecordError(
            f"{name} record version {version!r} is not supported; this kraft reads version "
            f"{cls.VERSION} (a newer kraft may have written it; upgrade this node)"
        )
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise MetadataRecordError(f"{name} record v{version} has unknown fields {unknown}")
    missing = [n for n, f in fields.items() if n not in body and f.default is dataclasses.MISSING]
    if missing:
        raise MetadataRecordError(f"{name} record v{version} lacks fields {missing}")
    for key in _TUPLE_FIELDS & body.keys():
        if body[key] is not None:
            body[key] = tuple(body[key])
    if body.get("offline_replicas") is not None:
        body["offline_replicas"] = tuple(tuple(pair) for pair in body["offline_replicas"])
    return cls(**body)


def encode_batch(records: list[MetadataRecord]) -> list[bytes]:
    return [encode(r) for r in records]


def decode_batch(values: list[bytes]) -> list[MetadataRecord]:
    return [decode(v) for v in values]
