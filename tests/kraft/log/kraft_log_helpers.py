"""Builds valid v2 record batches with struct + google_crc32c (independent of the codec), and
small helpers for splitting a log's bytes back into batches."""

from __future__ import annotations

import struct

import google_crc32c

from clients.record.batch_header import HEADER, LOG_OVERHEAD, parse_header


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _record(offset_delta: int, ts_delta: int, value: bytes) -> bytes:
    body = (
        b"\x00"
        + _varint(ts_delta)
        + _varint(offset_delta)
        + _varint(-1)
        + _varint(len(value))
        + value
        + _varint(0)
    )
    return _varint(len(body)) + body


def make_batch(
    n_records: int = 1,
    *,
    base_offset: int = 0,
    epoch: int = -1,
    base_ts: int = 1_000,
    ts_step: int = 1,
    value: bytes = b"v" * 10,
    attributes: int = 0,
) -> bytes:
    records = b"".join(_record(i, i * ts_step, value) for i in range(n_records))
    max_ts = base_ts + (n_records - 1) * ts_step
    header = bytearray(
        HEADER.pack(
            base_offset,
            49 + len(records),
            epoch,
            2,
            0,
            attributes,
            n_records - 1,
            base_ts,
            max_ts,
            -1,
            -1,
            -1,
            n_records,
        )
    )
    batch = header + records
    struct.pack_into(">I", batch, 17, google_crc32c.value(bytes(batch[21:])))
    return bytes(batch)


def split_batches(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size = LOG_OVERHEAD + struct.unpack_from(">i", data, pos + 8)[0]
        out.append(data[pos : pos + size])
        pos += size
    return out


def headers(data: bytes):
    return [parse_header(b) for b in split_batches(data)]


def read_all(log, max_offset=None) -> bytes:
    """Every batch from the log start, following segment boundaries."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30, max_offset=max_offset).records
        if not data:
            break
        out.append(data)
        offset = headers(data)[-1].next_offset
    return b"".join(out)


def with_crc(batch) -> bytes:
    """The batch with its CRC recomputed: how a sender makes edited bytes pass the CRC check."""
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, google_crc32c.value(bytes(out[21:])))
    return bytes(out)


def zstd_bomb(size: int) -> bytes:
    """A zstd frame of `size` zero bytes written as a stream (no content size in its header, as
    Java's producer writes them): a few KB that inflate to `size`."""
    import zstandard

    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    chunk = bytes(1 << 20)
    parts = [cobj.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + cobj.flush()


def batch_with_section(
    section: bytes, *, codec: int, count: int = 1, base_ts: int = 1_000, max_ts: int | None = None
) -> bytes:
    """A batch around an arbitrary records section (compressed or not), its CRC right."""
    max_ts = base_ts if max_ts is None else max_ts
    header = HEADER.pack(
        0, 49 + len(section), -1, 2, 0, codec, count - 1, base_ts, max_ts, -1, -1, -1, count
    )
    return with_crc(header + section)
