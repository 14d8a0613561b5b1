"""The Broker service's requests checked before they reach the replica manager (limits and
their reasons in request_limits.py): a function per RPC that raises Refused. Fetch and
ListOffsets read only field names the handlers' dataclasses share with protobuf: the handlers
run them, for every wire."""

from __future__ import annotations

from broker.edge.request_limits import (
    INT16_MAX,
    INT32_MAX,
    check_not_negative,
    check_range,
)
from clients.errors import ErrorCode

E = ErrorCode


def Fetch(req) -> None:
    check_range(
        "replica_id",
        req.replica_id,
        -1,
        INT32_MAX,
        hint="-1 for a consumer, the broker's node.id for a follower",
    )
    # Above the servicer's MAX_WAIT_MS_LIMIT a fetch waits that long: a long wait is no harm.
    check_not_negative("max_wait_ms", req.max_wait_ms, hint="use fetch.max.wait.ms, 0 or more")
    check_not_negative("min_bytes", req.min_bytes, hint="use fetch.min.bytes, 0 or more")
    check_not_negative(
        "max_bytes", req.max_bytes, hint="use fetch.max.bytes, or 0 for the broker's default"
    )
    check_range(
        "isolation_level", req.isolation_level, 0, 1, hint="0 read_uncommitted, 1 read_committed"
    )
    for topic in req.topics:
        for p in topic.partitions:
            where = f"{topic.topic[:60]}-{p.partition}"
            check_not_negative(
                f"{where}: partition",
                p.partition,
                E.UNKNOWN_TOPIC_OR_PARTITION,
                "partitions are numbered from 0",
            )
            check_not_negative(
                f"{where}: partition_max_bytes",
                p.partition_max_bytes,
                hint="use max.partition.fetch.bytes, or 0 for max_bytes",
            )
            check_range(
                f"{where}: current_leader_epoch",
                p.current_leader_epoch,
                -1,
                INT32_MAX,
                hint="-1 when not checked",
            )
            check_range(
                f"{where}: last_fetched_epoch",
                p.last_fetched_epoch,
                -1,
                INT32_MAX,
                hint="-1 when none",
            )


def WriteTxnMarkers(req) -> None:
    for m in req.markers:
        where = f"marker of producer {m.producer_id}"
        check_range(
            f"{where}: producer_id",
            m.producer_id,
            0,
            (1 << 63) - 1,
            hint="a transactional producer's id",
        )
        # Kafka's producer epoch is an int16, its coordinator epoch an int32.
        check_range(
            f"{where}: producer_epoch",
            m.producer_epoch,
            0,
            INT16_MAX,
            hint="the producer's current epoch",
        )
        check_range(
            f"{where}: coordinator_epoch",
            m.coordinator_epoch,
            0,
            INT32_MAX,
            hint="the transaction coordinator's epoch",
        )


def ListOffsets(req) -> None:
    check_range(
        "isolation_level", req.isolation_level, 0, 1, hint="0 read_uncommitted, 1 read_committed"
    )
