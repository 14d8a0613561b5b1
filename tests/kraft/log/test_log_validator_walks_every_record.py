"""A leader's append walks every record before anything is written: batches whose CRC holds but
whose records lie about their count, framing, offsets, timestamps, codec or keys are refused
with INVALID_RECORD (a bomb with MESSAGE_TOO_LARGE, in bounded memory) and nothing is appended."""

import gzip
import struct
import tracemalloc

import lz4.frame
import pytest
from kraft_log_helpers import batch_with_section, make_batch, read_all, with_crc, zstd_bomb

from clients.errors import ErrorCode
from clients.record.codec import decode_records, encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.log_validator import InvalidRecord, InvalidTimestamp, RecordTooLarge

INT_MAX = 2**31 - 1
GOOD = encode_batch([(b"g", b"v", (), 1_000)])  # keyed: good for compacted topics too


def open_log(tmp_path, **config):
    log = Log.open(tmp_path / "t-0", LogConfig(**config), now_ms=0)
    log.append_as_leader(GOOD + GOOD, 0, now_ms=0)
    return log


def refused(log, batch, error=InvalidRecord, match=None, now_ms=0):
    """Append `batch` after a good one: the request is refused, the log is as it was."""
    end, size = log.log_end_offset, log.size_in_bytes()
    with pytest.raises(error, match=match) as err:
        log.append_as_leader(GOOD + batch, 0, now_ms=now_ms)
    assert (log.log_end_offset, log.size_in_bytes()) == (end, size)
    assert "batch 1 (byte " in err.value.message and "nothing was appended" in err.value.message
    return err.value


def test_a_count_of_2_31_minus_1_over_one_record_does_not_move_the_log_end(tmp_path):
    log = open_log(tmp_path)
    lie = bytearray(make_batch(1))
    struct.pack_into(">i", lie, 23, INT_MAX - 1)  # lastOffsetDelta
    struct.pack_into(">i", lie, 57, INT_MAX)  # recordsCount
    err = refused(log, with_crc(lie), match="recordsCount 2147483647 cannot fit")
    assert err.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 2


def test_a_batch_cut_short_with_its_length_and_crc_fixed_is_refused(tmp_path):
    log = open_log(tmp_path)
    cut = bytearray(make_batch(3)[:-5])
    struct.pack_into(">i", cut, 8, len(cut) - 12)  # batchLength now covers what is left
    refused(log, with_crc(cut), match="record 2: it runs past the end")
    assert len(decode_records(read_all(log))) == 2  # consumers still read the partition


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_in_a_compressed_batch_is_refused(tmp_path, codec):
    log = open_log(tmp_path)
    refused(
        log,
        batch_with_section(b"not compressed at all" * 5, codec=codec),
        match="cannot decompress|Unknown frame|truncated",
    )


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_a_codec_kraft_does_not_read_is_refused(tmp_path, codec):
    log = open_log(tmp_path)
    section = encode_batch([(None, b"v", (), 1_000)])[61:]
    err = refused(log, batch_with_section(section, codec=codec), match=f"codec {codec} ")
    assert "produce with compression none, gzip, snappy, lz4 or zstd" in err.message


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_each_codec_inflates_to_max_message_bytes_at_most(tmp_path, codec):
    log = open_log(tmp_path, max_message_bytes=64 * 1024)
    records = [(b"k%d" % i, b"v" * 1000, (), 1_000) for i in range(100)]  # ~100 KB of records
    err = refused(
        log,
        encode_batch(records, compression=codec),
        error=RecordTooLarge,
        match="inflate past max.message.bytes=65536",
    )
    assert err.code == ErrorCode.MESSAGE_TOO_LARGE
    log.append_as_leader(encode_batch(records[:50], compression=codec), 0, now_ms=0)


def test_a_zstd_bomb_on_a_compacted_topic_is_refused_in_bounded_memory(tmp_path):
    log = open_log(tmp_path, cleanup_policy="compact")
    bomb = batch_with_section(zstd_bomb(256 << 20), codec=4)  # 8 KB inflating to 256 MiB
    tracemalloc.start()
    try:
        refused(log, bomb, error=RecordTooLarge, match="zstd records inflate past")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the default max.message.bytes (1 MiB) and change


@pytest.mark.parametrize(
    "what, edit, match",
    [
        (
            "offset deltas out of order",
            lambda rs: [rs[1], rs[0], rs[2]],
            "record 0: offset delta is 1",
        ),
        (
            "a record's length one too long",
            lambda rs: [bytes([rs[0][0] + 2]) + rs[0][1:] + b"\x00", rs[1], rs[2]],
            "record 0: its length says it ends at byte",
        ),
        (
            "bytes after the last record",
            lambda rs: rs + [b"\x00\x00"],
            "2 bytes follow the last of the 3 records",
        ),
    ],
)
def test_record_framing_must_be_exact(tmp_path, what, edit, match):
    log = open_log(tmp_path)
    section = make_batch(3)[61:]
    records, p = [], 0
    for _ in range(3):  # each record here is under 64 bytes: 1-byte length
        n = section[p] >> 1
        records.append(section[p : p + 1 + n])
        p += 1 + n
    refused(
        log,
        batch_with_section(b"".join(edit(records)), codec=0, count=3, max_ts=1_002),
        match=match,
    )


def test_header_counts_and_keys_are_checked(tmp_path):
    log = open_log(tmp_path)
    good = encode_batch([(b"k", b"v", [("h", b"x")], 1_000)])
    section = bytearray(good[61:])
    at = section.index(b"\x02\x02h")  # header count 1, key length 1, key "h"
    too_many = section[:at] + b"\x7e" + section[at + 1 :]  # header count 63
    refused(log, batch_with_section(bytes(too_many), codec=0), match="header count 63")
    not_utf8 = section[: at + 2] + b"\xff" + section[at + 3 :]
    refused(log, batch_with_section(bytes(not_utf8), codec=0), match="header key is not UTF-8")


def test_max_timestamp_must_be_the_largest_record_timestamp(tmp_path):
    log = open_log(tmp_path)
    section = encode_batch([(None, b"v", (), 1_000), (None, b"v", (), 1_005)])[61:]
    refused(
        log,
        batch_with_section(section, codec=0, count=2, max_ts=9_999),
        match="maxTimestamp is 9999 but its largest record timestamp is 1005",
    )
    log.append_as_leader(batch_with_section(section, codec=0, count=2, max_ts=1_005), 0, 0)


def test_create_time_bounds_are_the_topics_before_and_after_max_ms(tmp_path):
    log = Log.open(
        tmp_path / "t-0",
        LogConfig(message_timestamp_before_max_ms=1_000, message_timestamp_after_max_ms=500),
        now_ms=0,
    )
    now = 100_000
    for ts, key, limit in ((now - 1_001, "before", 1000), (now + 501, "after", 500)):
        with pytest.raises(
            InvalidTimestamp, match=f"message.timestamp.{key}.max.ms={limit}"
        ) as err:
            log.append_as_leader(encode_batch([(None, b"v", (), ts)]), 0, now_ms=now)
        assert err.value.code == ErrorCode.INVALID_TIMESTAMP
    assert log.log_end_offset == 0
    log.append_as_leader(
        encode_batch([(None, b"v", (), now - 1_000), (None, b"v", (), now + 500)]), 0, now_ms=now
    )
    assert log.log_end_offset == 2


def test_keys_are_required_on_compacted_topics_in_every_codec(tmp_path):
    log = open_log(tmp_path, cleanup_policy="compact")
    for codec in (0, 1, 3, 4):
        keyless = encode_batch(
            [(b"k", b"v", (), 1_000), (None, b"v", (), 1_000)], compression=codec
        )
        refused(log, keyless, match="record 1 has no key, and the topic is compacted")


def test_multi_member_and_multi_frame_sections_are_read_whole(tmp_path):
    log = open_log(tmp_path)
    records = [(b"k%d" % i, b"v", (), 1_000) for i in range(4)]
    section = encode_batch(records)[61:]
    half = section.index(b"k2") - 5  # record 2's start: length, attributes, 2 deltas, key length
    assert section[half] >> 1 == section[0] >> 1
    for codec, pack in ((1, lambda b: gzip.compress(b, mtime=0)), (3, lz4.frame.compress)):
        two = pack(section[:half]) + pack(section[half:])
        info = log.append_as_leader(batch_with_section(two, codec=codec, count=4), 0, now_ms=0)
        assert info.last_offset - info.first_offset == 3


def test_follower_appends_keep_to_header_checks(tmp_path):
    """A follower stores what its leader already walked, even a compacted batch the cleaner
    thinned (fewer records than lastOffsetDelta + 1), which a produce could never carry."""
    log = open_log(tmp_path, cleanup_policy="compact")
    thinned = bytearray(encode_batch([(b"k", b"v", (), 1_000)], base_offset=2))
    struct.pack_into(">i", thinned, 23, 4)  # lastOffsetDelta 4 over one kept record
    log.append_as_follower(with_crc(thinned))
    assert log.log_end_offset == 7


def test_control_batches_and_producer_ids_without_sequences_are_not_produced(tmp_path):
    log = open_log(tmp_path)
    marker = encode_batch(
        [(b"\x00\x00\x00\x00", b"", (), 1_000)],
        is_control=True,
        is_transactional=True,
        producer_id=3,
        producer_epoch=0,
        base_sequence=0,
    )
    refused(log, marker, match="is a control batch")
    refused(
        log,
        encode_batch([(b"k", b"v", (), 1_000)], producer_id=3, producer_epoch=0),
        match="has producerId 3 but baseSequence -1",
    )
