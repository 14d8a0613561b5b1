"""TransactionMetadata: one transactional id's state as the coordinator holds it (Kafka's
TransactionMetadata), the durable part of which is its last `__transaction_state` record, plus
the transition in flight while the next record is appended (Kafka's pending state)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace

from broker.transaction.messages import NO_PRODUCER_EPOCH
from broker.transaction.records import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TransactionLogValue,
)
from clients.types import TopicPartition

MAX_PRODUCER_EPOCH = 2**15 - 1  # int16; at MAX - 1 an InitProducerId rotates the producer id
PREPARE = {True: PREPARE_COMMIT, False: PREPARE_ABORT}
COMPLETE = {True: COMPLETE_COMMIT, False: COMPLETE_ABORT}
COMPLETED = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)  # no transaction in progress

# Which state may follow which (Kafka's TransactionState.validPreviousStates, read forwards).
# Prepare* -> Ongoing never happens: a decided transaction is only ever completed.
VALID_NEXT = {
    EMPTY: {EMPTY, ONGOING},
    ONGOING: {ONGOING, PREPARE_COMMIT, PREPARE_ABORT},
    PREPARE_COMMIT: {COMPLETE_COMMIT},
    PREPARE_ABORT: {COMPLETE_ABORT},
    COMPLETE_COMMIT: {EMPTY, ONGOING},
    COMPLETE_ABORT: {EMPTY, ONGOING},
}


@dataclass
class Transit:
    """The next record of one transactional id, appended and not yet committed. `kind` says what
    to do once it is: "init", "add", "offsets", "end", "fence" (an abort with a bumped epoch:
    Kafka's PrepareEpochFence, never written itself), "complete", "expire" (a tombstone)."""

    kind: str
    value: TransactionLogValue | None
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    handle: Hashable | None = None
    answer: object = None  # "add": the per-partition answer to give on success
    was_new: bool = False  # the id had no record before this one


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: frozenset[TopicPartition] = frozenset()
    txn_start_ms: int = -1
    last_update_ms: int = -1
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # soft state: v0 records do not keep it
    pending: Transit | None = field(default=None, repr=False)

    @classmethod
    def from_value(
        cls,
        transactional_id: str,
        value: TransactionLogValue,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> TransactionMetadata:
        return cls(
            transactional_id,
            value.producer_id,
            value.producer_epoch,
            value.timeout_ms,
            value.state,
            value.partitions,
            value.txn_start_ms,
            value.last_update_ms,
            last_producer_epoch,
        )

    def to_value(self) -> TransactionLogValue:
        return TransactionLogValue(
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            self.state,
            self.partitions,
            self.last_update_ms,
            self.txn_start_ms,
        )

    def apply(self, value: TransactionLogValue, last_producer_epoch: int) -> None:
        """A committed record of this id: it is now the durable state."""
        self.producer_id, self.producer_epoch = value.producer_id, value.producer_epoch
        self.timeout_ms, self.state, self.partitions = (
            value.timeout_ms,
            value.state,
            value.partitions,
        )
        self.txn_start_ms, self.last_update_ms = value.txn_start_ms, value.last_update_ms
        self.last_producer_epoch = last_producer_epoch

    def next_value(self, **changes) -> TransactionLogValue:
        return replace(self.to_value(), **changes)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1

    def timed_out(self, now_ms: int) -> bool:
        return (
            self.state == ONGOING
            and self.pending is None
            and self.txn_start_ms + self.timeout_ms <= now_ms
        )

    def expired(self, now_ms: int, expiration_ms: int) -> bool:
        return (
            self.state in COMPLETED
            and self.pending is None
            and self.last_update_ms + expiration_ms <= now_ms
        )
