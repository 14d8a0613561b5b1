"""Checks an append before anything is written (Kafka's LogValidator): every batch intact and
within size limits, every record of a leader's append walked; the in-place LogAppendTime stamp."""

from __future__ import annotations

import struct

from clients.errors import ErrorCode, KraftError, RecordTooLarge
from clients.record.batch_header import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    CorruptBatchError,
    validate_batch,
)
from clients.record.buffer_view import crc32c
from clients.record.compression import GZIP, LZ4, NAMES, NONE, SNAPPY, ZSTD, DecompressedTooLarge
from clients.record.record_scan import walk_batch
from kraft.log.log_config import LogConfig

_ATTRIBUTES = struct.Struct(">h")
_MAX_TIMESTAMP = struct.Struct(">q")
_MAX_TIMESTAMP_OFFSET = 35
_CRC = struct.Struct(">I")
_READABLE_CODECS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)
_REBUILD = (
    "the client that built it wrote a malformed batch: fix or replace it (kraft's "
    "producer and Kafka's clients write valid ones)"
)


class OffsetOutOfRange(KraftError):
    """A read outside [log_start_offset, log_end_offset]."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, message)


class CorruptRecords(KraftError):
    """An append with an invalid batch, or a follower append that does not continue the log."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CORRUPT_MESSAGE, message)


class InvalidRecord(KraftError):
    """A batch whose CRC holds but whose records break the format or the topic's rules (a count
    that lies, bad framing, a codec kraft cannot read, no key on a compacted topic): the sender
    built it so, and resending the same bytes cannot help (Kafka's InvalidRecordException)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_RECORD, message)


class InvalidTimestamp(KraftError):
    """A CreateTime record outside message.timestamp.before.max.ms / after.max.ms of now."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_TIMESTAMP, message)


def validate_records(
    buf,
    config: LogConfig,
    name: str,
    *,
    leader: bool,
    now_ms: int | None = None,
    from_coordinator: bool = False,
) -> list:
    """Every batch checked before anything is written: one bad batch rejects the request.

    A leader (a client's bytes) also walks every record of every batch (check_batch_records).
    A follower keeps to the header and CRC: its bytes are the leader's log, whose records the
    leader walked before appending them; refusing them could only stall replication of what is
    already committed, and walking each record again on every replica would multiply the
    produce path's CPU by the replication factor. `from_coordinator`: batches the broker built
    itself (transaction markers, Kafka's AppendOrigin.COORDINATOR), control batches allowed."""
    headers, pos, end = [], 0, len(buf)
    max_bytes, seg_bytes = config.max_message_bytes, config.segment_bytes
    while pos < end:
        try:
            header = validate_batch(buf, pos)
        except CorruptBatchError as e:
            raise CorruptRecords(
                f"batch {len(headers)} (byte {pos}) for {name} is "
                f"invalid: {e}; nothing was appended"
            ) from None
        if header.size > max_bytes or header.size > seg_bytes:
            limit, value = (
                ("max.message.bytes", max_bytes)
                if header.size > max_bytes
                else ("segment.bytes", seg_bytes)
            )
            raise RecordTooLarge(
                f"batch {len(headers)} is {header.size} bytes, over {limit}={value} for {name}; "
                f"send smaller batches or "
                f"raise the topic's {limit}; nothing was appended"
            )
        if leader and not from_coordinator:
            check_batch_records(
                buf,
                pos,
                header,
                config,
                f"batch {len(headers)} (byte {pos}) of the request to {name}",
                now_ms,
            )
        headers.append((pos, header))
        pos += header.size
    return headers


def check_batch_records(
    buf, pos: int, header: BatchHeader, config: LogConfig, where: str, now_ms: int | None
) -> None:
    """Kafka's LogValidator on one intact batch from a client: not a control batch, a base
    sequence with a producer id, recordsCount equal to lastOffsetDelta + 1 and the
    records really present, offset deltas 0..n-1, exact varint framing, maxTimestamp the largest
    record timestamp, CreateTime within message.timestamp.before/after.max.ms of `now_ms`, keys on
    compacted topics, a codec kraft reads. The records section inflates to at most
    max.message.bytes: compression saves bandwidth and disk but does not raise the topic's size
    limit, so a bomb is refused after that many bytes (Kafka has no such bound)."""
    attributes = header.attributes
    if attributes & CONTROL_FLAG:
        # Control batches (transaction markers) are the broker's to write; consumers skip them,
        # so a produced one would only hide its records (Kafka refuses them from clients too).
        raise InvalidRecord(
            f"{where}: is a control batch (attributes bit 5); only the broker "
            f"writes those: produce ordinary batches; nothing was appended"
        )
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidRecord(
            f"{where}: has producerId {header.producer_id} but baseSequence "
            f"{header.base_sequence}: an idempotent producer numbers its "
            f"batches from 0 (no producer id: -1); nothing was appended"
        )
    codec = attributes & COMPRESSION_MASK
    if codec not in _READABLE_CODECS:
        raise InvalidRecord(
            f"{where}: compression codec {codec} "
            f"({NAMES.get(codec, 'not a Kafka codec')}) is not one kraft reads; "
            f"produce with compression none, gzip, snappy, lz4 or zstd; "
            f"nothing was appended"
        )
    try:
        scan = walk_batch(buf, pos, header, config.max_message_bytes)
    except DecompressedTooLarge:
        raise RecordTooLarge(
            f"{where}: its {NAMES[codec]} records inflate past max.message.bytes="
            f"{config.max_message_bytes}, the bound on a batch's records compressed or not; "
            f"send smaller batches or raise the topic's max.message.bytes; "
            f"nothing was appended"
        ) from None
    except CorruptBatchError as exc:
        raise InvalidRecord(f"{where}: {exc}; {_REBUILD}; nothing was appended") from None
    if not attributes & TIMESTAMP_TYPE_MASK:  # CreateTime: the records' own timestamps
        _check_timestamps(
            header, scan.min_timestamp_delta, scan.max_timestamp_delta, config, where, now_ms
        )
    if config.compact and scan.first_keyless >= 0:
        # Compaction keeps the last record per key, so a keyless one has no meaning there
        # (Kafka's LogValidator refuses it too).
        raise InvalidRecord(
            f"{where}: record {scan.first_keyless} has no key, and the topic is compacted "
            f"(cleanup.policy includes 'compact'): give every record a key, or use a topic "
            f"with cleanup.policy=delete; nothing was appended"
        )


def _check_timestamps(
    header: BatchHeader, lo: int, hi: int, config: LogConfig, where: str, now_ms: int | None
) -> None:
    max_ts = header.base_timestamp + hi
    if max_ts != header.max_timestamp:
        raise InvalidRecord(
            f"{where}: maxTimestamp is {header.max_timestamp} but its largest "
            f"record timestamp is {max_ts}; {_REBUILD}; nothing was appended"
        )
    if now_ms is None or config.log_append_time:
        return  # LogAppendTime: the broker's stamp replaces them
    min_ts = header.base_timestamp + lo
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    if min_ts < now_ms - before or max_ts > now_ms + after:
        bad, key = (min_ts, "before") if min_ts < now_ms - before else (max_ts, "after")
        raise InvalidTimestamp(
            f"{where}: timestamp {bad} is {abs(bad - now_ms)} ms {key} the broker's time "
            f"{now_ms}, over message.timestamp.{key}.max.ms="
            f"{before if key == 'before' else after}; check the producer's clock or "
            f"timestamps, or raise that topic config; nothing was appended"
        )


def stamp_log_append_time(buf: bytearray, pos: int, header: BatchHeader, now_ms: int) -> None:
    """LogAppendTime: set the timestamp-type bit and maxTimestamp; both are inside the CRC."""
    _ATTRIBUTES.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _MAX_TIMESTAMP.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, now_ms)
    _CRC.pack_into(buf, pos + CRC_OFFSET, crc32c(buf, pos + ATTRIBUTES_OFFSET, pos + header.size))
