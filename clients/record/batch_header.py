"""The fixed 61-byte header of a v2 record batch: parse it, check it, and set the two fields the
broker assigns in place (base offset, partition leader epoch), which lie outside the CRC."""

from __future__ import annotations

import struct
from typing import NamedTuple

from clients.record.buffer_view import crc32c

MAGIC = 2
HEADER_SIZE = 61
# Bytes before batchLength's count begins: baseOffset (8) + batchLength (4).
LOG_OVERHEAD = 12
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER = struct.Struct(">qiibIhiqqqhii")
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # the CRC covers attributes .. end of batch
PARTITION_LEADER_EPOCH_OFFSET = 12
_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_LENGTH_AND_MAGIC = struct.Struct(">qiib")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1


class CorruptBatchError(ValueError):
    """The bytes are not a valid v2 record batch; the message names what was wrong and where."""


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Decode the header at `pos` without checking it (see `validate_batch`)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatchError(
            f"truncated batch header: {len(buf) - pos} bytes at position {pos}, need {HEADER_SIZE}"
        )
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def validate_batch(buf, pos: int = 0) -> BatchHeader:
    """Check one whole batch at `pos`: length, magic, CRC32C and a sane header.
    Returns the header; raises CorruptBatchError naming the problem."""
    available = len(buf) - pos
    if available < LOG_OVERHEAD + 5:
        raise CorruptBatchError(f"truncated batch: {available} bytes at position {pos}")
    _, batch_length, _, magic = _LENGTH_AND_MAGIC.unpack_from(buf, pos)
    if magic != MAGIC:
        raise CorruptBatchError(f"unsupported magic {magic} at position {pos} (only v2, magic 2)")
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptBatchError(
            f"batch length {batch_length} at position {pos} is below the "
            f"minimum {HEADER_SIZE - LOG_OVERHEAD}"
        )
    if batch_length > available - LOG_OVERHEAD:
        raise CorruptBatchError(
            f"batch at position {pos} claims {batch_length} bytes but only "
            f"{available - LOG_OVERHEAD} follow"
        )
    header = parse_header(buf, pos)
    end = pos + LOG_OVERHEAD + batch_length
    actual = crc32c(buf, pos + ATTRIBUTES_OFFSET, end)
    if actual != header.crc:
        raise CorruptBatchError(
            f"CRC mismatch at position {pos}: stored {header.crc:#010x}, computed {actual:#010x}"
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptBatchError(f"negative lastOffsetDelta or recordsCount at position {pos}")
    return header


def iter_valid_batches(buf, pos: int = 0):
    """Yield (position, header) for each whole valid batch; raises at the first corrupt one and
    requires `buf` to end exactly on a batch boundary."""
    end = len(buf)
    while pos < end:
        header = validate_batch(buf, pos)
        yield pos, header
        pos += header.size


def set_base_offset_and_epoch(
    buf: bytearray, pos: int, base_offset: int, leader_epoch: int
) -> None:
    """The broker's in-place stamp: neither field is covered by the CRC."""
    _BASE_OFFSET.pack_into(buf, pos, base_offset)
    _EPOCH.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)


# The bytes stamped_prefix replaces: baseOffset, batchLength, partitionLeaderEpoch.
STAMPED_PREFIX_SIZE = PARTITION_LEADER_EPOCH_OFFSET + 4
_PREFIX = struct.Struct(">qii")


def stamped_prefix(header: BatchHeader, base_offset: int, leader_epoch: int) -> bytes:
    """The batch's first STAMPED_PREFIX_SIZE bytes with the broker's stamp: written before the
    rest of the batch, it stamps a batch without copying (or mutating) the producer's bytes."""
    return _PREFIX.pack(base_offset, header.batch_length, leader_epoch)
