"""Walks the records section of a v2 batch without building a record: exact varint framing, the
count, offset deltas 0..n-1, timestamp range and keys (the broker's LogValidator scan, pure)."""

from __future__ import annotations

from typing import NamedTuple

from clients.record.batch_header import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
)
from clients.record.compression import decompress
from clients.record.varint import decode_varint, read_unsigned

# A 32-bit varint (lengths, counts, offset deltas) takes at most 5 bytes; its zigzag form fits 32.
_INT32_ZIGZAG_LIMIT = 1 << 32
# Records this large on average are walked in place rather than in a copy of the section.
IN_PLACE_FROM_BYTES = 4096
# Timestamp deltas are 64-bit, so these start the running minimum and maximum.
_NO_LOW, _NO_HIGH = 1 << 64, -(1 << 64)


class InvalidRecordsError(CorruptBatchError):
    """The batch is intact (its CRC holds) but its records do not match its header: the sender
    built it wrong, so sending the same bytes again cannot help."""


class RecordsScan(NamedTuple):
    min_timestamp_delta: int
    max_timestamp_delta: int
    first_keyless: int  # index of the first record without a key, -1 if all have one


def walk_batch(
    buf, pos: int, header: BatchHeader, max_size: int, *, compacted: bool = False
) -> RecordsScan:
    """The records of the intact batch at `pos` (CRC already checked): recordsCount equal to
    lastOffsetDelta + 1 and to the records present, inflated to at most `max_size` bytes.
    `compacted`: a batch in a log the cleaner may have thinned (fewer records, offset deltas
    increasing up to lastOffsetDelta). Raises DecompressedTooLarge past the bound,
    InvalidRecordsError or CorruptBatchError."""
    count = header.records_count
    last = header.last_offset_delta
    thinned = compacted and 0 < count <= last
    if count <= 0 or (count != last + 1 and not thinned):
        raise InvalidRecordsError(
            f"recordsCount {count} does not match lastOffsetDelta "
            f"{header.last_offset_delta} (a batch of n records has "
            f"lastOffsetDelta n-1, n >= 1)"
        )
    start, end = pos + HEADER_SIZE, pos + header.size
    codec = header.attributes & COMPRESSION_MASK
    if codec:
        section = decompress(codec, buf[start:end], max_size)
    elif end - start >= IN_PLACE_FROM_BYTES * count:
        # Large records: a few reads each, so a window on the buffer (which stops the scan at
        # the batch end as a copy would) costs less than copying megabytes.
        section = memoryview(buf)[start:end]
    else:
        section = bytes(buf[start:end])  # bytes index fastest: small records take many reads
    return scan_records(section, 0, count, last if thinned else None)


def scan_records(data, p: int, count: int, thinned_to: int | None = None) -> RecordsScan:
    """Check that `data[p:]` holds exactly `count` well-framed records, the i-th with offset
    delta i (or, `thinned_to` given, increasing deltas up to it); raises InvalidRecordsError
    naming the record and what is wrong.

    The hot loop reads the one- and two-byte varint forms inline (lengths under 8 KiB, deltas
    under 8192; a call each costs more than the read, codec._decode_section says how much), the
    rest by varint.read_unsigned, and leaves IndexError to catch a read past the end: one check
    per field."""
    end_all = len(data)
    if count <= 0:
        raise InvalidRecordsError(f"recordsCount is {count}; a batch holds at least one record")
    # Seven bytes is the smallest record (length, attributes, timestamp and offset deltas, null
    # key, null value, no headers): a count above that is a lie we can see without the walk.
    if count > (end_all - p) // 7:
        raise InvalidRecordsError(
            f"recordsCount {count} cannot fit in {end_all - p} bytes of "
            f"records (a record takes at least 7)"
        )
    slow = read_unsigned
    limit = _INT32_ZIGZAG_LIMIT
    lo, hi = _NO_LOW, _NO_HIGH
    keyless = -1
    i = 0
    zi = 0  # zigzag(i): the offset delta record i must carry
    step = 2
    if thinned_to is not None:
        zi, step = -1, 0  # matches no zigzag value, so every delta takes the slow check
        previous = -1
    try:
        for i in range(count):
            b = data[p]  # the record's length; zigzag's low bit is the sign
            if b & 1:
                z, _ = slow(data, p)
                raise _bad(i, f"record length {(z >> 1) ^ -(z & 1)} is negative")
            if b < 0x80:
                p += 1
                end = p + (b >> 1)
            else:
                c = data[p + 1]
                if c < 0x80:
                    p += 2
                    end = p + (((b & 0x7F) | (c << 7)) >> 1)
                else:
                    z, p = slow(data, p)
                    if z >= limit:
                        raise _bad(i, f"record length {z >> 1} exceeds 2^31-1")
                    end = p + (z >> 1)
            b = data[p + 1]  # past the record's attributes byte (unused in v2)
            if b < 0x80:
                z = b
                p += 2
            else:
                c = data[p + 2]
                if c < 0x80:
                    z = (b & 0x7F) | (c << 7)
                    p += 3
                else:
                    z, p = slow(data, p + 1)
            d = (z >> 1) ^ -(z & 1)
            if d < lo:
                lo = d
            if d > hi:
                hi = d
            b = data[p]
            if b < 0x80:
                z = b
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    z = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    z, p = slow(data, p)
            if z != zi:
                d = (z >> 1) ^ -(z & 1)
                if thinned_to is None:
                    raise _bad(
                        i,
                        f"offset delta is {d}, expected {i} (deltas run "
                        f"0..recordsCount-1 in order)",
                    )
                if not previous < d <= thinned_to:
                    raise _bad(
                        i,
                        f"offset delta {d} does not follow {previous} within "
                        f"lastOffsetDelta {thinned_to}",
                    )
                previous = d
            zi += step
            # key then value: a length (zigzag even, or 1 for null) and that many bytes
            b = data[p]
            if b < 0x80:
                p += 1
                if b & 1:
                    if b != 1:
                        raise _bad_length(i, "key", b)
                    if keyless < 0:
                        keyless = i
                else:
                    p += b >> 1
            else:
                z, p = slow(data, p)
                if z & 1 or z >= limit:
                    raise _bad_length(i, "key", z)
                p += z >> 1
            b = data[p]
            if b < 0x80:
                p += 1
                if b & 1:
                    if b != 1:
                        raise _bad_length(i, "value", b)
                else:
                    p += b >> 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    if b & 1:
                        raise _bad_length(i, "value", (b & 0x7F) | (c << 7))
                    p += 2 + (((b & 0x7F) | (c << 7)) >> 1)
                else:
                    z, p = slow(data, p)
                    if z & 1 or z >= limit:
                        raise _bad_length(i, "value", z)
                    p += z >> 1
            if data[p] == 0:
                p += 1
            else:
                p = _scan_headers(data, p, end, i)
            if p != end:
                raise _bad(
                    i,
                    f"its length says it ends at byte {end} of the records section "
                    f"but its fields end at byte {p}",
                )
    except IndexError:
        raise _bad(
            i,
            f"it runs past the end of the records section ({end_all} bytes) while "
            f"recordsCount says {count}",
        ) from None
    except InvalidRecordsError:
        raise
    except CorruptBatchError as exc:  # a varint over 10 bytes, from read_unsigned
        raise _bad(i, str(exc)) from None
    if p != end_all:
        raise InvalidRecordsError(
            f"{end_all - p} bytes follow the last of the {count} records "
            f"(recordsCount); the batch must end with its last record"
        )
    return RecordsScan(lo, hi, keyless)


def _scan_headers(data, p: int, end: int, i: int) -> int:
    """Past the headers of record `i` (the rare path: records with headers)."""
    n, p = decode_varint(data, p)
    if n < 0 or n > end - p:
        raise _bad(i, f"header count {n} is not possible in the bytes left of the record")
    for _ in range(n):
        klen, p = decode_varint(data, p)
        if klen < 0 or p + klen > end:
            raise _bad(i, f"header key length {klen} does not fit the record")
        try:
            bytes(data[p : p + klen]).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(i, "a header key is not UTF-8") from None
        p += klen
        vlen, p = decode_varint(data, p)
        if vlen < -1 or p + vlen > end:
            raise _bad(i, f"header value length {vlen} does not fit the record")
        if vlen > 0:
            p += vlen
    return p


def _bad_length(i: int, what: str, z: int) -> InvalidRecordsError:
    n = (z >> 1) ^ -(z & 1)
    return _bad(i, f"{what} length {n} is not -1 (null) or a length below 2^31")


def _bad(i: int, what: str) -> InvalidRecordsError:
    return InvalidRecordsError(f"record {i}: {what}")
