"""Kafka's zigzag varints (ByteUtils.writeVarint / writeVarlong) for the records inside a v2 batch,
with a table of precomputed encodings so the hot loops in codec.py can skip the arithmetic."""

from __future__ import annotations

from clients.record.batch_header import CorruptBatchError

# Encodings of 0..TABLE_SIZE-1 (record lengths, key/value lengths, offset and timestamp deltas);
# 16384 entries cover every record up to 16 KiB for about 0.6 MB of memory.
TABLE_SIZE = 16384
# A varlong takes at most 10 bytes; anything longer is corrupt, not merely large.
MAX_VARINT_BYTES = 10
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def zigzag(n: int) -> int:
    """Signed to unsigned: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ... (valid for 32 and 64 bits)."""
    return (n << 1) ^ (n >> 63)


def encode_varint(n: int) -> bytes:
    """The zigzag varint bytes of `n` (a varint and a varlong encode a 32-bit value identically)."""
    if 0 <= n < TABLE_SIZE:
        return VARINTS[n]
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError(f"{n} does not fit in a 64-bit varlong")
    return encode_unsigned(zigzag(n))


def encode_unsigned(z: int) -> bytes:
    """Plain (protobuf) varint bytes of a non-negative `z`: no zigzag."""
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def decode_varint(buf, pos: int) -> tuple[int, int]:
    """Read one zigzag varint at `pos`: returns (value, position after it).
    Raises CorruptBatchError when it runs past the end or exceeds 10 bytes."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:  # the one-byte form (-64..63): no loop, no second call
            return (b >> 1) ^ -(b & 1), pos + 1
    z, pos = read_unsigned(buf, pos)
    return (z >> 1) ^ -(z & 1), pos


def read_unsigned(buf, pos: int) -> tuple[int, int]:
    """The raw (still zigzagged) varint at `pos`; the slow path behind the inlined reads."""
    z = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise CorruptBatchError(f"truncated varint at record offset {start}")
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return z, pos
        shift += 7
        if pos - start >= MAX_VARINT_BYTES:
            raise CorruptBatchError(
                f"bad varint at record offset {start}: more than {MAX_VARINT_BYTES} bytes"
            )


VARINTS: tuple[bytes, ...] = tuple(encode_unsigned(n << 1) for n in range(TABLE_SIZE))
