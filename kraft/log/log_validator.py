"""Checks an append before anything is written (Kafka's LogValidator, header-level only): every
batch valid, within size limits and dense; and the in-place LogAppendTime stamp."""
from __future__ import annotations

import struct

from clients.errors import ErrorCode, KraftError
from clients.record.batch_header import (
    ATTRIBUTES_OFFSET, CRC_OFFSET, TIMESTAMP_TYPE_MASK, BatchHeader, CorruptBatchError, crc32c,
    validate_batch)
from clients.record.codec import decode_records
from kraft.log.log_config import LogConfig

_ATTRIBUTES = struct.Struct(">h")
_MAX_TIMESTAMP = struct.Struct(">q")
_MAX_TIMESTAMP_OFFSET = 35
_CRC = struct.Struct(">I")


class OffsetOutOfRange(KraftError):
    """A read outside [log_start_offset, log_end_offset]."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, message)


class CorruptRecords(KraftError):
    """An append with an invalid batch, or a follower append that does not continue the log."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CORRUPT_MESSAGE, message)


class RecordTooLarge(KraftError):
    """A batch over max.message.bytes (or over segment.bytes)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.MESSAGE_TOO_LARGE, message)


class InvalidRecord(KraftError):
    """A record the topic cannot take: a record without a key for a compacted topic."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_RECORD, message)


def validate_records(buf, config: LogConfig, name: str, *, leader: bool) -> list:
    """Every batch checked before anything is written: one bad batch rejects the request."""
    headers, pos, end = [], 0, len(buf)
    max_bytes, seg_bytes = config.max_message_bytes, config.segment_bytes
    while pos < end:
        try:
            header = validate_batch(buf, pos)
        except CorruptBatchError as e:
            raise CorruptRecords(f"batch {len(headers)} (byte {pos}) for {name} is "
                                 f"invalid: {e}; nothing was appended") from None
        if header.size > max_bytes or header.size > seg_bytes:
            limit, value = ("max.message.bytes", max_bytes) if header.size > max_bytes \
                else ("segment.bytes", seg_bytes)
            raise RecordTooLarge(
                f"batch {len(headers)} is {header.size} bytes, over {limit}={value} for {name}; "
                f"send smaller batches or "
                f"raise the topic's {limit}; nothing was appended")
        if leader and (header.records_count <= 0
                       or header.records_count != header.last_offset_delta + 1):
            raise CorruptRecords(
                f"batch {len(headers)} for {name} has {header.records_count} records but "
                f"lastOffsetDelta {header.last_offset_delta}; nothing was appended")
        headers.append((pos, header))
        pos += header.size
    if leader and config.compact and headers:
        _require_keys(buf, name)
    return headers


def _require_keys(buf, name: str) -> None:
    """Compaction keeps the last record per key, so a keyless one has no meaning there (Kafka's
    LogValidator refuses it too). The only check that decodes records: compacted topics only."""
    for i, record in enumerate(decode_records(bytes(buf), verify_crc=False, skip_control=True)):
        if record.key is None:
            raise InvalidRecord(
                f"record {i} of the request to {name} has no key, and {name} is compacted "
                f"(cleanup.policy includes 'compact'): give every record a key, or use a topic "
                f"with cleanup.policy=delete; nothing was appended")


def stamp_log_append_time(buf: bytearray, pos: int, header: BatchHeader, now_ms: int) -> None:
    """LogAppendTime: set the timestamp-type bit and maxTimestamp; both are inside the CRC."""
    _ATTRIBUTES.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _MAX_TIMESTAMP.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, now_ms)
    _CRC.pack_into(buf, pos + CRC_OFFSET,
                   crc32c(bytes(buf[pos + ATTRIBUTES_OFFSET:pos + header.size])))
