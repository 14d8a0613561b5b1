"""walk_batch, the record walk the broker's validator and the audit share: every batch our
encoder writes walks with the right timestamp range and keys; thinned (compacted) batches walk
only when allowed; varints and lengths out of range are named, never read past."""

import struct

import pytest

from clients.record.batch_header import parse_header
from clients.record.codec import encode_batch
from clients.record.record_scan import InvalidRecordsError, RecordsScan, scan_records, walk_batch

SHAPES = {
    "bare": [(None, b"v" * 100, (), 1_000)] * 3,
    "keys and headers": [
        (b"k", None, [("a", b"1"), ("b", None)], 1_000),
        (b"", b"", (), 900),
        (b"k" * 300, b"v" * 9000, [("c", b"")], 1_050),
    ],
    "many": [(b"k%d" % i, b"x" * (i % 200), (), 1_000 + i) for i in range(9000)],
}


@pytest.mark.parametrize("codec", [0, 1, 3, 4])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_batch_our_encoder_writes_walks(codec, shape):
    records = SHAPES[shape]
    batch = encode_batch(records, compression=codec)
    scan = walk_batch(batch, 0, parse_header(batch), 1 << 24)
    base = records[0][3]
    assert scan == RecordsScan(
        min(r[3] for r in records) - base,
        max(r[3] for r in records) - base,
        next((i for i, r in enumerate(records) if r[0] is None), -1),
    )


def test_thinned_batches_walk_only_where_compaction_may_have_thinned_them():
    kept = encode_batch([(b"a", b"1", (), 5), (b"b", b"2", (), 5)])
    section = bytearray(kept[61:])
    section[section.index(b"a") - 2] = 2 * 3  # the first record's offset delta: 3
    section[section.index(b"b") - 2] = 2 * 7  # the second's: 7
    thinned = bytearray(kept[:61] + section)
    struct.pack_into(">i", thinned, 23, 9)  # lastOffsetDelta 9 over 2 records
    header = parse_header(thinned)
    assert walk_batch(thinned, 0, header, 1 << 20, compacted=True).first_keyless == -1
    with pytest.raises(InvalidRecordsError, match="recordsCount 2 does not match lastOffsetDelta"):
        walk_batch(thinned, 0, header, 1 << 20)
    section[section.index(b"b") - 2] = 2 * 3  # the same delta twice
    with pytest.raises(InvalidRecordsError, match="offset delta 3 does not follow 3"):
        walk_batch(
            bytes(kept[:61] + section),
            0,
            header._replace(last_offset_delta=9),
            1 << 20,
            compacted=True,
        )


@pytest.mark.parametrize(
    "section, match",
    [
        (b"\x80" * 11, "more than 10 bytes"),  # a varint that never ends
        (
            b"\xfe\xff\xff\xff\x1f" + b"\x00" * 10,
            "record length 4294967295 exceeds 2\\^31-1",
        ),  # 2^32-1
        (b"\x0e\x00\x00\x00\x03\x02\x00", "key length -2"),
        (b"\x0e\x00\x00\x00\x01\x80\x80\x80\x80\x10\x00", "value length .* below 2\\^31"),
        (b"\x0c\x00\x00\x00\x01\x01\x00" + b"\x00", "1 bytes follow the last"),
    ],
)
def test_bad_varints_and_lengths_are_named(section, match):
    with pytest.raises(InvalidRecordsError, match=match):
        scan_records(section, 0, 1)


def test_negative_lengths_are_refused_in_every_varint_size():
    for n in (-2, -100, -10_000, -(2**31)):
        z = (n << 1) ^ (n >> 63)
        varint = bytearray()
        while z > 0x7F:
            varint.append((z & 0x7F) | 0x80)
            z >>= 7
        varint.append(z)
        body = b"\x00\x00\x00\x01" + bytes(varint) + b"\x00"  # null key, value length n
        with pytest.raises(InvalidRecordsError, match=f"value length {n} is not"):
            scan_records(bytes([len(body) << 1]) + body, 0, 1)
