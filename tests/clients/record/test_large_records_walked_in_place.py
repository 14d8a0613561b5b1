"""Large records are checked without copying them: the CRC over a view of the caller's buffer
(bytes, bytearray or memoryview) and the record walk in a window on it. Both give exactly what
the copying paths give, errors included, and stop at the batch's end as a copy would."""

from __future__ import annotations

import struct

import google_crc32c
import pytest

from clients.record import buffer_view, record_scan
from clients.record.batch_header import HEADER_SIZE, CorruptBatchError, parse_header, validate_batch
from clients.record.codec import encode_batch
from clients.record.record_scan import walk_batch

BIG = [(b"k%d" % i, bytes([65 + i]) * 300_000, None, 1000 + i) for i in range(3)]


def views(data: bytes):
    return [data, bytearray(data), memoryview(data), memoryview(bytearray(data))]


@pytest.mark.parametrize("start,end", [(0, 5), (3, 70_000), (100, 900_000), (0, 900_001)])
def test_the_crc_of_a_range_is_the_crc_of_its_copy(start, end):
    data = bytes(range(256)) * 3600
    for buf in views(data):
        assert buffer_view.crc32c(buf, start, end) == google_crc32c.value(data[start:end])


def test_a_range_past_the_buffer_is_refused():
    with pytest.raises(IndexError, match="outside a buffer of 921600 bytes"):
        buffer_view.crc32c(bytes(921_600), 0, 921_601)


def test_a_large_batch_inside_a_larger_buffer_validates_in_place():
    batch = encode_batch(BIG)
    data = b"\0" * 40 + batch + b"\xff" * 100  # the walk must not read the bytes around it
    for buf in views(data):
        header = validate_batch(buf, 40)
        assert header.records_count == 3
        scan = walk_batch(buf, 40, header, 1 << 30)
        assert (scan.min_timestamp_delta, scan.max_timestamp_delta, scan.first_keyless) == (
            0,
            2,
            -1,
        )


def _corrupted():
    """Large batches whose records lie about their framing, each with a valid header."""
    batch = encode_batch(BIG)
    header = parse_header(batch, 0)
    short_count = bytearray(batch)
    struct.pack_into(">i", short_count, 57, 4)  # recordsCount 4, lastOffsetDelta 2
    struct.pack_into(">i", short_count, 23, 3)
    cut = bytearray(batch[: HEADER_SIZE + 300_010])  # the second record runs past the end
    struct.pack_into(">i", cut, 8, len(cut) - 12)
    trailing = bytearray(batch + b"\0\0\0")  # bytes after the last record
    struct.pack_into(">i", trailing, 8, len(trailing) - 12)
    return [(bytes(b), parse_header(b, 0)) for b in (short_count, cut, trailing)], header


def test_a_walk_in_place_fails_as_the_walk_of_a_copy_does(monkeypatch):
    cases, _ = _corrupted()
    for batch, header in cases:
        errors = []
        for in_place in (True, False):
            monkeypatch.setattr(record_scan, "IN_PLACE_FROM_BYTES", 1 if in_place else 1 << 40)
            with pytest.raises(CorruptBatchError) as info:
                walk_batch(batch + b"\x01" * 50, 0, header, 1 << 30)
            errors.append(str(info.value))
        assert errors[0] == errors[1]


@pytest.mark.parametrize("size", [0, 1, 5, 70_000, 2_500_000])
def test_bytes_written_in_place_hold_what_was_written(size):
    pattern = bytes(range(251)) * (size // 251 + 1)

    def write(view):
        view[:] = pattern[:size]

    out = buffer_view.bytes_written_in_place(size, write)
    assert type(out) is bytes and out == pattern[:size]
    assert hash(out) == hash(bytes(bytearray(pattern[:size])))
    if size:
        with pytest.raises(TypeError):
            memoryview(out)[0] = 1  # read-only again once returned


def test_a_failed_write_raises_through():
    def write(view):
        raise OSError("segment file ended short")

    with pytest.raises(OSError, match="ended short"):
        buffer_view.bytes_written_in_place(100_000, write)
