"""Damaged batches raise CorruptBatchError naming the problem; a fetch response cut inside its
last batch is read up to that batch, silently."""

import struct

import pytest

from clients.record.batch_header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    CorruptBatchError,
)
from clients.record.codec import (
    count_records,
    decode_batch,
    decode_records,
    encode_batch,
    iter_batches,
)
from clients.record.varint import encode_varint

RECORDS = [
    (b"key-%d" % i, b"value-%d" % i * 10, [("h", b"x")] if i % 2 else None, 1000 + i)
    for i in range(20)
]


def reseal(buf: bytearray) -> bytes:
    """Recompute the CRC so a test reaches the checks behind it."""
    from clients.record.batch_header import crc32c

    struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))
    return bytes(buf)


def with_section(section: bytes, count: int) -> bytes:
    """A batch around a hand-made records section, with a valid CRC."""
    good = bytearray(encode_batch([(None, b"v", None, 0)]))
    struct.pack_into(">i", good, 8, HEADER_SIZE - 12 + len(section))
    struct.pack_into(">i", good, 57, count)
    return reseal(good[:HEADER_SIZE] + bytearray(section))


@pytest.mark.parametrize("codec", [0, 1, 3, 4])
def test_every_flipped_byte_in_crc_area_is_caught(codec):
    batch = encode_batch(RECORDS, compression=codec)
    for pos in range(ATTRIBUTES_OFFSET, len(batch), 7):
        damaged = bytearray(batch)
        damaged[pos] ^= 0x40
        with pytest.raises(CorruptBatchError, match="CRC mismatch"):
            decode_batch(bytes(damaged))
        with pytest.raises(CorruptBatchError, match="CRC mismatch"):
            decode_records(bytes(damaged))


def test_flipped_crc_field_is_caught():
    damaged = bytearray(encode_batch(RECORDS))
    damaged[CRC_OFFSET] ^= 1
    with pytest.raises(CorruptBatchError, match="CRC mismatch"):
        decode_batch(damaged)


def test_truncated_batch():
    batch = encode_batch(RECORDS)
    for cut in (len(batch) - 1, HEADER_SIZE + 3, HEADER_SIZE - 1, 10):
        with pytest.raises(CorruptBatchError, match="truncated"):
            decode_batch(batch[:cut])


def test_wrong_length_field():
    batch = bytearray(encode_batch(RECORDS))
    struct.pack_into(">i", batch, 8, len(batch))  # 12 bytes more than there are
    with pytest.raises(CorruptBatchError, match="truncated batch"):
        decode_batch(bytes(batch))
    struct.pack_into(">i", batch, 8, 20)  # shorter than a header
    with pytest.raises(CorruptBatchError, match="bad batch length 20"):
        decode_batch(bytes(batch))
    with pytest.raises(CorruptBatchError, match="bad batch length 20"):
        list(iter_batches(bytes(batch)))


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_unknown_magic(magic):
    batch = bytearray(encode_batch(RECORDS))
    batch[16] = magic & 0xFF
    for call in (decode_batch, decode_records, lambda b: list(iter_batches(b))):
        with pytest.raises(CorruptBatchError, match=f"unsupported magic {magic}"):
            call(bytes(batch))


def test_records_count_higher_than_records():
    batch = bytearray(encode_batch(RECORDS))
    struct.pack_into(">i", batch, 57, len(RECORDS) + 1)
    with pytest.raises(CorruptBatchError, match="truncated record 20.*recordsCount says 21"):
        decode_batch(reseal(batch))


def test_records_count_lower_than_records_leaves_trailing_bytes():
    batch = bytearray(encode_batch(RECORDS))
    struct.pack_into(">i", batch, 57, len(RECORDS) - 1)
    with pytest.raises(CorruptBatchError, match="trailing garbage"):
        decode_batch(reseal(batch))


def test_trailing_garbage_inside_batch():
    section = encode_batch(RECORDS)[HEADER_SIZE:]
    with pytest.raises(CorruptBatchError, match="trailing garbage"):
        decode_batch(with_section(section + b"\x00\x00", len(RECORDS)))


def test_record_length_mismatch():
    body = b"\x00" + encode_varint(0) + encode_varint(0) + b"\x01" + b"\x02v" + b"\x00"
    with pytest.raises(CorruptBatchError, match="record length mismatch"):
        decode_batch(with_section(encode_varint(len(body) + 1) + body + b"\x00", 1))


def test_bad_varint():
    with pytest.raises(CorruptBatchError, match="bad varint"):
        decode_batch(with_section(b"\x10\x00" + b"\xff" * 12, 1))


@pytest.mark.parametrize("field", ["key", "value"])
def test_negative_length_other_than_null(field):
    bad = encode_varint(-3)
    key, value = (bad, b"\x02v") if field == "key" else (b"\x01", bad + b"vv")
    body = b"\x00\x00\x00" + key + value + b"\x00"
    with pytest.raises(CorruptBatchError, match=f"bad {field} length -3"):
        decode_batch(with_section(encode_varint(len(body)) + body, 1))


def test_garbage_in_compressed_section():
    batch = bytearray(encode_batch(RECORDS, compression=4))
    batch[HEADER_SIZE + 6 : HEADER_SIZE + 12] = b"\xde\xad\xbe\xef\xde\xad"
    with pytest.raises(CorruptBatchError, match="zstd"):
        decode_batch(reseal(batch))


def test_unsupported_codec_in_attributes():
    batch = bytearray(encode_batch(RECORDS))
    batch[ATTRIBUTES_OFFSET + 1] |= 5  # no codec has number 5
    with pytest.raises(CorruptBatchError, match="unsupported compression codec 5"):
        decode_batch(reseal(batch))


def test_verify_crc_false_skips_only_the_crc():
    batch = bytearray(encode_batch(RECORDS))
    batch[CRC_OFFSET] ^= 1
    assert len(decode_records(bytes(batch), verify_crc=False)) == len(RECORDS)
    assert len(decode_batch(bytes(batch), verify_crc=False)[1]) == len(RECORDS)


def test_iteration_stops_silently_at_a_partial_last_batch():
    one, two = encode_batch(RECORDS), encode_batch(RECORDS, base_offset=20)
    for cut in (1, 11, 12, 60, len(two) - 1):
        fetch = one + two[:cut]
        assert [pos for pos, _ in iter_batches(fetch)] == [0]
        assert count_records(fetch) == len(RECORDS)
        assert [r.offset for r in decode_records(fetch)] == list(range(20))
    assert count_records(one + two) == 40
    assert count_records(b"") == 0 and decode_records(b"") == []
