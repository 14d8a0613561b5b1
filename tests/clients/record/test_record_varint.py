"""Zigzag varints match Kafka's ByteUtils encodings, round-trip the 64-bit range, and reject
truncated or over-long input with CorruptBatchError."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clients.record.batch_header import CorruptBatchError
from clients.record.varint import TABLE_SIZE, VARINTS, decode_varint, encode_varint, zigzag


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (300, b"\xd8\x04"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
        (-(2**63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_known_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_round_trip_64_bit(value):
    encoded = encode_varint(value)
    assert decode_varint(b"junk" + encoded + b"more", 4) == (value, 4 + len(encoded))


def test_table_agrees_with_arithmetic():
    for n in (0, 1, 63, 64, 8191, 8192, TABLE_SIZE - 1):
        z = zigzag(n)
        raw = bytearray()
        while z > 0x7F:
            raw.append((z & 0x7F) | 0x80)
            z >>= 7
        raw.append(z)
        assert VARINTS[n] == bytes(raw)


def test_truncated_varint_is_corrupt():
    with pytest.raises(CorruptBatchError, match="truncated varint"):
        decode_varint(b"\x80\x80", 0)


def test_overlong_varint_is_corrupt():
    with pytest.raises(CorruptBatchError, match="bad varint"):
        decode_varint(b"\xff" * 11, 0)


def test_out_of_range_value_is_refused():
    with pytest.raises(ValueError):
        encode_varint(2**63)
