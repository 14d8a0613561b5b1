"""The `__transaction_state` records in Kafka's TransactionLog layout (key: version 0 and the
transactional id; value v0: producer id, epoch, timeout, status, partitions, timestamps; a None
value is a tombstone), their bytes, and which partition holds a transactional id."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.coordinator.placement import partition_for
from clients.types import TopicPartition

TRANSACTION_STATE_TOPIC = "__transaction_state"

KEY_VERSION = 0
VALUE_VERSION = 0

# Kafka's TransactionState ids, as written in the value's status byte.
EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
DEAD = "Dead"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
STATUS_IDS = {
    EMPTY: 0,
    ONGOING: 1,
    PREPARE_COMMIT: 2,
    PREPARE_ABORT: 3,
    COMPLETE_COMMIT: 4,
    COMPLETE_ABORT: 5,
    DEAD: 6,
    PREPARE_EPOCH_FENCE: 7,
}
STATES = {v: k for k, v in STATUS_IDS.items()}

_I8, _I16, _I32, _I64 = (
    struct.Struct(">b"),
    struct.Struct(">h"),
    struct.Struct(">i"),
    struct.Struct(">q"),
)


class TransactionRecordError(ValueError):
    """Bytes in `__transaction_state` that are not a record this version of kraft understands."""


@dataclass(frozen=True)
class TransactionLogValue:
    """One transactional id's durable state. `partitions` is empty (written as null) in Empty."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    txn_start_ms: int


# -- writing --------------------------------------------------------------------------------------
def _string(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0x7FFF:
        raise TransactionRecordError(
            f"string of {len(data)} bytes is too long for a record (at most 32767)"
        )
    return _I16.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def encode_value(value: TransactionLogValue | None) -> bytes | None:
    if value is None:
        return None
    if value.state not in STATUS_IDS:
        raise TransactionRecordError(f"unknown transaction state {value.state!r}")
    out = [
        _I16.pack(VALUE_VERSION),
        _I64.pack(value.producer_id),
        _I16.pack(value.producer_epoch),
        _I32.pack(value.timeout_ms),
        _I8.pack(STATUS_IDS[value.state]),
    ]
    if value.state == EMPTY or not value.partitions:
        out.append(_I32.pack(-1))  # Kafka writes a null array when there are none
    else:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(value.partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        out.append(_I32.pack(len(by_topic)))
        for topic, partitions in by_topic.items():
            out.append(_string(topic) + _I32.pack(len(partitions)))
            out.extend(_I32.pack(p) for p in partitions)
    out += [_I64.pack(value.last_update_ms), _I64.pack(value.txn_start_ms)]
    return b"".join(out)


def encode_record(
    transactional_id: str, value: TransactionLogValue | None
) -> tuple[bytes, bytes | None]:
    return encode_key(transactional_id), encode_value(value)


# -- reading --------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise TransactionRecordError(
                f"{self.what} ends early at byte {self.pos} (length {len(self.data)})"
            )
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def string(self) -> str:
        n = self.take(_I16)
        if n < 0 or self.pos + n > len(self.data):
            raise TransactionRecordError(f"{self.what}: bad string length {n} at byte {self.pos}")
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            raise TransactionRecordError(f"{self.what}: string is not UTF-8: {e}") from None

    def count(self) -> int:
        n = self.take(_I32)
        if n > len(self.data):  # more entries than bytes left: garbage, not a record
            raise TransactionRecordError(f"{self.what}: array length {n} is impossible")
        return n


def decode_key(data: bytes) -> str:
    reader = _Reader(data, "__transaction_state key")
    version = reader.take(_I16)
    if version != KEY_VERSION:
        raise TransactionRecordError(
            f"unknown __transaction_state key version {version}; was it written by a newer kraft?"
        )
    return reader.string()


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    if data is None:
        return None
    reader = _Reader(data, "__transaction_state value")
    version = reader.take(_I16)
    if version != VALUE_VERSION:
        raise TransactionRecordError(
            f"unknown __transaction_state value version {version}; was it written by a newer kraft?"
        )
    producer_id, epoch = reader.take(_I64), reader.take(_I16)
    timeout_ms, status = reader.take(_I32), reader.take(_I8)
    if status not in STATES:
        raise TransactionRecordError(f"unknown transaction status {status}")
    partitions = set()
    for _ in range(max(reader.count(), 0)):  # -1: null, none
        topic = reader.string()
        for _ in range(reader.count()):
            partitions.add(TopicPartition(topic, reader.take(_I32)))
    last_update_ms, start_ms = reader.take(_I64), reader.take(_I64)
    return TransactionLogValue(
        producer_id,
        epoch,
        timeout_ms,
        STATES[status],
        frozenset(partitions),
        last_update_ms,
        start_ms,
    )


def decode_record(key: bytes, value: bytes | None) -> tuple[str, TransactionLogValue | None]:
    return decode_key(key), decode_value(value)


def transaction_partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's TransactionStateManager.partitionFor: the same hash as a group's partition."""
    return partition_for(transactional_id, num_partitions)
