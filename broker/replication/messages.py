"""Frozen dataclasses PartitionState takes and hands out: a follower's fetch, the leader's answer
to it, the result of a leader append, and the effects a driver must carry out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from clients.errors import ErrorCode
from kraft.raft.log import EpochEndOffset

# Kafka's sentinels: -1 is "no epoch" / "no offset" (an empty log has no leader epoch yet).
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
ACKS_ALL = -1

__all__ = [
    "ACKS_ALL",
    "AppendResult",
    "Effect",
    "EpochEndOffset",
    "FetchAnswer",
    "FetchDecision",
    "FollowerFetch",
    "HighWatermarkAdvanced",
    "IsrChanged",
    "ProposeIsr",
    "Truncated",
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
]


# -- effects: what the driver must do after a call ------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProposeIsr:
    """Send AlterPartition to the controller. `broker_epochs` pairs with `new_isr` (KIP-903): the
    controller refuses a member whose broker epoch is stale, i.e. a process that restarted (and may
    have lost unflushed data) since the leader saw it caught up; -1 for the leader itself."""

    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    broker_epochs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HighWatermarkAdvanced:
    """Complete delayed produces (acks=all) and fetches waiting on it; checkpoint it lazily."""

    high_watermark: int


@dataclass(frozen=True, slots=True)
class Truncated:
    """The log was cut at `offset` (KIP-101): drop producer state and indexes above it."""

    offset: int


@dataclass(frozen=True, slots=True)
class IsrChanged:
    """The committed ISR (as the controller confirmed it) changed: re-check acks=all waiters
    against min.insync.replicas; update metrics."""

    isr: tuple[int, ...]
    partition_epoch: int


Effect = Union[ProposeIsr, HighWatermarkAdvanced, Truncated, IsrChanged]


# -- fetch: follower -> leader -> follower --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FollowerFetch:
    """What a follower sends its leader. `fetch_offset` is its log end offset and acknowledges
    everything below it; `last_fetched_epoch` is the epoch of the entry just below it."""

    replica_id: int
    leader_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchDecision:
    """The leader's answer. Exactly one of: `error` set; `diverging_epoch` set (the follower must
    truncate, then fetch again); or `read_from` set: send the records the log holds from there
    (the driver reads them). `effects` came out of recording the fetch (HW moved, ISR proposal)."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    leader_epoch: int = UNDEFINED_EPOCH
    high_watermark: int = UNDEFINED_OFFSET
    log_start_offset: int = UNDEFINED_OFFSET
    read_from: int | None = None
    diverging_epoch: EpochEndOffset | None = None
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """What the follower received for one FollowerFetch: the decision's fields plus the records
    (opaque to the core: raw batch bytes in the broker, a tuple of records in the twin)."""

    error: ErrorCode = ErrorCode.NONE
    high_watermark: int = UNDEFINED_OFFSET
    log_start_offset: int = UNDEFINED_OFFSET
    diverging_epoch: EpochEndOffset | None = None
    records: Any = ()

    @classmethod
    def of(cls, decision: FetchDecision, records: Any = ()) -> FetchAnswer:
        return cls(
            decision.error,
            decision.high_watermark,
            decision.log_start_offset,
            decision.diverging_epoch,
            records,
        )


# -- produce --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AppendResult:
    """A leader append: on success the records hold [first_offset, last_offset] in `leader_epoch`;
    with acks=all, answer the producer once `acks_satisfied(last_offset, leader_epoch)` is not
    None. On error nothing was appended."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    first_offset: int = UNDEFINED_OFFSET
    last_offset: int = UNDEFINED_OFFSET
    leader_epoch: int = UNDEFINED_EPOCH
    effects: tuple[Effect, ...] = ()
