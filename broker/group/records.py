"""The `__consumer_offsets` records as Kafka has them (OffsetCommit and GroupMetadata key/value
pairs; a None value is a tombstone), their bytes, and which partition holds a group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

import msgpack

from broker.coordinator.placement import partition_for

OFFSETS_TOPIC = "__consumer_offsets"

# Keys are msgpack arrays led by Kafka's key version, which says what the key is: 0 and 1 offset
# commit (we write 1), 2 group metadata. Arrays, not maps, so one key always has the same bytes
# and compaction keeps only its latest value. Values are msgpack maps {"version", ...fields}.

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


class OffsetsRecordError(ValueError):
    """Bytes in `__consumer_offsets` that are not a record this version of kraft understands."""


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # only v1 wrote one; kept for the format's sake


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class MemberMetadataValue:
    """One member as the group stored it: `subscription` is its metadata for the group's chosen
    protocol, `assignment` what the leader gave it (both opaque to the coordinator)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadataValue, ...] = ()


Key = Union[OffsetCommitKey, GroupMetadataKey]
Value = Union[OffsetCommitValue, GroupMetadataValue, None]


def encode_key(key: Key) -> bytes:
    if isinstance(key, OffsetCommitKey):
        return msgpack.packb([OFFSET_COMMIT_KEY_VERSION, key.group, key.topic, key.partition])
    return msgpack.packb([GROUP_METADATA_KEY_VERSION, key.group])


def decode_key(data: bytes) -> Key:
    try:
        fields = msgpack.unpackb(data)
        if fields[0] in (0, 1):
            return OffsetCommitKey(fields[1], fields[2], fields[3])
        if fields[0] == GROUP_METADATA_KEY_VERSION:
            return GroupMetadataKey(fields[1])
    except (ValueError, TypeError, IndexError, msgpack.UnpackException) as e:
        raise OffsetsRecordError(f"unreadable __consumer_offsets key {data!r}: {e}") from None
    raise OffsetsRecordError(
        f"unknown __consumer_offsets key version {fields[0]!r}; was it written by a newer kraft?"
    )


def encode_value(value: Value) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, OffsetCommitValue):
        return msgpack.packb(
            {
                "version": OFFSET_COMMIT_VALUE_VERSION,
                "offset": value.offset,
                "leader_epoch": value.leader_epoch,
                "metadata": value.metadata,
                "commit_timestamp": value.commit_timestamp,
                "expire_timestamp": value.expire_timestamp,
            }
        )
    return msgpack.packb(
        {
            "version": GROUP_METADATA_VALUE_VERSION,
            "protocol_type": value.protocol_type,
            "generation": value.generation,
            "protocol": value.protocol,
            "leader": value.leader,
            "current_state_timestamp": value.current_state_timestamp,
            "members": [
                [
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    m.subscription,
                    m.assignment,
                ]
                for m in value.members
            ],
        }
    )


def decode_value(key: Key, data: bytes | None) -> Value:
    if data is None:
        return None
    try:
        m = msgpack.unpackb(data)
        if isinstance(key, OffsetCommitKey):
            return OffsetCommitValue(
                m["offset"],
                m.get("leader_epoch", -1),
                m.get("metadata", ""),
                m.get("commit_timestamp", -1),
                m.get("expire_timestamp", -1),
            )
        return GroupMetadataValue(
            m["protocol_type"],
            m["generation"],
            m.get("protocol"),
            m.get("leader"),
            m.get("current_state_timestamp", -1),
            tuple(MemberMetadataValue(*fields) for fields in m.get("members", ())),
        )
    except (ValueError, TypeError, KeyError, msgpack.UnpackException) as e:
        raise OffsetsRecordError(f"unreadable __consumer_offsets value for {key}: {e}") from None


def encode_record(key: Key, value: Value) -> tuple[bytes, bytes | None]:
    return encode_key(key), encode_value(value)


def decode_record(key: bytes, value: bytes | None) -> tuple[Key, Value]:
    k = decode_key(key)
    return k, decode_value(k, value)


# -- placement ------------------------------------------------------------------------------------
def find_coordinator(
    group_id: str, num_partitions: int, leader_of: Callable[[int], int | None]
) -> tuple[int, int | None]:
    """FindCoordinator's answer from metadata: (offsets partition, coordinator node id or None
    while that partition has no leader; answer COORDINATOR_NOT_AVAILABLE then)."""
    partition = partition_for(group_id, num_partitions)
    leader = leader_of(partition)
    return partition, (leader if leader is not None and leader >= 0 else None)
