"""One producer's entry on one partition (its epoch and last batches) and the verdict on its next
batch: the values and the rules (decide) that producer_state.py's manager applies."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from clients.errors import ErrorCode

SEQUENCE_LIMIT = 2**31  # sequences run 0 .. 2^31-1, then wrap to 0
BATCHES_PER_PRODUCER = 5  # Kafka's NUM_BATCHES_TO_RETAIN: max.in.flight of an idempotent producer
NO_PRODUCER_ID = -1
NO_TXN = -1

APPEND = "append"
DUPLICATE = "duplicate"
REJECT = "reject"


def next_sequence(sequence: int, increment: int = 1) -> int:
    return (sequence + increment) % SEQUENCE_LIMIT


def last_sequence(header) -> int:
    """The last sequence of a batch header: base sequence + lastOffsetDelta, wrapping."""
    return next_sequence(header.base_sequence, header.last_offset_delta)


def is_checked(header) -> bool:
    """Does this batch take part in idempotence (a producer id and not a control batch)?"""
    return header.producer_id != NO_PRODUCER_ID and not header.is_control


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int = -1


@dataclass(frozen=True)
class ProducerEntry:
    """One producer on one partition: its epoch and last batches, oldest first. Frozen so a
    request's batches can be checked against staged copies without touching the real state."""

    producer_id: int
    epoch: int
    batches: tuple[BatchMetadata, ...] = ()
    current_txn_first_offset: int = NO_TXN  # the open transaction's first offset
    coordinator_epoch: int = -1  # of the last marker written for it
    marker_timestamp: int = -1  # of that marker: activity too, for expiration

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_timestamp(self) -> int:
        """The max timestamp of its last batch: when it was last active (Kafka's lastTimestamp)."""
        return max(self.batches[-1].timestamp if self.batches else -1, self.marker_timestamp)

    @property
    def in_transaction(self) -> bool:
        return self.current_txn_first_offset != NO_TXN

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def with_batch(self, epoch: int, batch: BatchMetadata, keep: int) -> ProducerEntry:
        # A new epoch starts a new sequence space: the old epoch's batches can no longer match.
        kept = self.batches if epoch == self.epoch else ()
        return replace(self, epoch=epoch, batches=(kept + (batch,))[-keep:])


class CompletedTxn(NamedTuple):
    """A transaction a marker closed: its data from `first_offset`, its marker at `last_offset`;
    `last_stable_offset` as it closed (the first offset of the earliest transaction still open,
    else the offset after the marker): a .txnindex entry's, so a search can stop early."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int


@dataclass(frozen=True)
class Decision:
    action: str  # APPEND, DUPLICATE or REJECT
    error_code: int = 0
    message: str = ""
    first_offset: int = -1  # DUPLICATE: where the original copy of the batch is
    last_offset: int = -1

    @property
    def is_append(self) -> bool:
        return self.action == APPEND

    @property
    def is_duplicate(self) -> bool:
        return self.action == DUPLICATE


ACCEPT = Decision(APPEND)  # the verdict of every batch that may be appended


def reject(code: ErrorCode, message: str) -> Decision:
    return Decision(REJECT, int(code), message)


def decide(
    entry: ProducerEntry | None,
    producer_id: int,
    epoch: int,
    first_seq: int,
    last_seq: int,
    name: str = "",
) -> Decision:
    """The verdict on one batch against `entry` (None: this producer id is unknown here)."""
    where = f" on {name}" if name else ""
    if epoch < 0 or first_seq < 0:
        return reject(
            ErrorCode.INVALID_RECORD,
            f"producer {producer_id} sent epoch {epoch}, base sequence {first_seq}"
            f"{where}: an idempotent batch needs both >= 0",
        )
    if entry is None:
        return ACCEPT
    if epoch < entry.epoch:
        return reject(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            f"producer {producer_id} epoch {epoch} is fenced{where}: epoch "
            f"{entry.epoch} is newer; a newer instance of this producer took over",
        )
    dup = entry.find_duplicate(epoch, first_seq, last_seq)
    if dup is not None:
        return Decision(DUPLICATE, first_offset=dup.first_offset, last_offset=dup.last_offset)
    if epoch > entry.epoch:
        if first_seq != 0:
            return reject(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} started epoch {epoch}{where} at sequence "
                f"{first_seq}; a new epoch must start at 0",
            )
        return ACCEPT
    if not entry.batches:
        # Known only by a marker (a coordinator that bumped the epoch when it aborted): this
        # epoch has no batch here yet, so it starts at 0, as a new epoch does.
        if first_seq != 0:
            return reject(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} sent sequence {first_seq} as the first batch "
                f"of epoch {epoch}{where} (set by a transaction marker); a new epoch "
                "must start at 0",
            )
        return ACCEPT
    if first_seq != next_sequence(entry.last_seq):
        return reject(
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            f"producer {producer_id} epoch {epoch} sent sequence {first_seq}{where}, "
            f"expected {next_sequence(entry.last_seq)} (the last appended batch ended "
            f"at {entry.last_seq}); nothing was appended",
        )
    return ACCEPT
