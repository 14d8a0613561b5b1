"""The "consumer" embedded protocol (Kafka's ConsumerProtocol): what a member subscribes to and
owns, what the leader assigns it; opaque bytes to the coordinator, msgpack maps here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgpack

from clients.types import TopicPartition

PROTOCOL_TYPE = "consumer"
VERSION = 1
NO_GENERATION = -1


@dataclass(frozen=True)
class Subscription:
    """A member's JoinGroup metadata for one assignor. `owned_partitions` and `generation` let
    the sticky assignor keep what each member had (ConsumerProtocolSubscription v2)."""

    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    user_data: bytes | None = None
    # Set by the assignor's caller from the JoinGroup response, not encoded: the coordinator
    # sends it beside the metadata. Range and round-robin order static members by it.
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None


def _group_by_topic(tps: Iterable[TopicPartition]) -> list:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(tps):
        by_topic.setdefault(topic, []).append(partition)
    return [[topic, parts] for topic, parts in by_topic.items()]


def _flatten(pairs) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, parts in pairs for p in parts)


def encode_subscription(sub: Subscription) -> bytes:
    return msgpack.packb(
        {
            "version": VERSION,
            "topics": sorted(sub.topics),
            "owned": _group_by_topic(sub.owned_partitions),
            "generation": sub.generation,
            "user_data": sub.user_data,
        }
    )


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> Subscription:
    m = msgpack.unpackb(data)
    return Subscription(
        tuple(m["topics"]),
        _flatten(m.get("owned", ())),
        m.get("generation", NO_GENERATION),
        m.get("user_data"),
        group_instance_id,
    )


def encode_assignment(assignment: Assignment) -> bytes:
    return msgpack.packb(
        {
            "version": VERSION,
            "partitions": _group_by_topic(assignment.partitions),
            "user_data": assignment.user_data,
        }
    )


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string is "nothing assigned": the coordinator fills members the leader left
    out with it."""
    if not data:
        return Assignment()
    m = msgpack.unpackb(data)
    return Assignment(_flatten(m["partitions"]), m.get("user_data"))
