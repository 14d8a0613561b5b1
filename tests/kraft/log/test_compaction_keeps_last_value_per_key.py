"""Compaction keeps the last value per key at its original offset: offsets, batch fields and the
active segment survive; tombstones last delete.retention.ms; compact,delete applies both."""

import os

import pytest
from compaction_helpers import (
    BASE_TS,
    append,
    batch_headers,
    compact,
    compact_config,
    latest_by_key,
    live_map,
    open_log,
    records,
    roll,
)
from kraft_log_helpers import read_all

from clients.errors import ErrorCode
from clients.record.batch_header import COMPRESSION_MASK
from clients.record.codec import decode_batch, encode_batch
from kraft.log.cleaner import plan_cleaning
from kraft.log.log_manager import LogManager
from kraft.log.log_validator import InvalidRecord

DAY = 86_400_000


def _pairs(n, keys=5):
    return [(b"k%d" % (i % keys), b"v%d" % i) for i in range(n)]


def test_compaction_keeps_the_last_value_per_key_at_its_original_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    pairs = _pairs(40)
    append(log, pairs)
    roll(log)
    before = log.segment_count
    result = compact(log)
    got = {r.key: (r.offset, r.value) for r in records(log)}
    assert got == latest_by_key(pairs)
    assert [r.offset for r in records(log)] == sorted(o for o, _ in got.values())
    assert result.records_read == 40 and result.records_kept == 5 and result.end_offset == 40
    assert log.log_start_offset == 0 and log.log_end_offset == 40 and log.segment_count == before


def test_segments_left_small_by_cleaning_are_merged_by_the_next_pass(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, _pairs(40))
    roll(log)
    first = compact(log)
    sizes = [seg.size for seg in log.segments[:-1]]
    assert len(sizes) == 3 and sum(sizes) < 600
    append(log, _pairs(4))
    roll(log)
    compact(log, checkpoint=first.end_offset)
    assert log.segment_count == 2  # one cleaned segment, one active
    assert [r.offset for r in records(log)] == [39, 40, 41, 42, 43]  # k4 kept from before


def test_offsets_increase_with_gaps_and_reads_inside_a_gap_skip_ahead(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, _pairs(30, keys=3))
    roll(log)
    compact(log)
    offsets = [r.offset for r in records(log)]
    assert offsets == [27, 28, 29]
    first = log.read(0, 1 << 20).records  # offset 0 was removed: the next batch comes
    assert decode_batch(first)[1][0].offset >= 26
    # A follower copying the cleaned log accepts the gaps (compacted topics only).
    follower = open_log(tmp_path / "t-1")
    follower.append_as_follower(read_all(log))
    assert [r.offset for r in records(follower)] == offsets
    assert follower.log_end_offset == 30


def test_the_active_segment_is_never_touched(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, _pairs(20))
    roll(log)
    append(log, _pairs(6))  # superseded inside the active segment: stays as it is
    active = log.segments[-1]
    data = os.pread(active.fd, active.size, 0)
    compact(log)
    assert log.segments[-1] is active
    assert os.pread(active.fd, active.size, 0) == data
    assert [r.offset for r in records(log) if r.offset >= 20] == list(range(20, 26))
    # Keys rewritten in the active segment do not remove older ones yet: the map stops at it.
    assert {r.key for r in records(log) if r.offset < 20} == {b"k%d" % i for i in range(5)}


def test_tombstones_stay_for_delete_retention_ms_then_go(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config(delete_retention_ms=DAY))
    append(log, [(b"a", b"1"), (b"b", b"1"), (b"a", None), (b"c", b"1")])
    roll(log)
    compact(log, now_ms=BASE_TS + 10)
    assert [(r.key, r.value) for r in records(log)] == [(b"b", b"1"), (b"a", None), (b"c", b"1")]
    compact(log, now_ms=BASE_TS + 3 + DAY)  # not yet older than the retention
    assert (b"a", None) in [(r.key, r.value) for r in records(log)]
    compact(log, now_ms=BASE_TS + 4 + DAY)  # the segment's newest record is older
    assert [(r.offset, r.key, r.value) for r in records(log)] == [(1, b"b", b"1"), (3, b"c", b"1")]


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config(min_compaction_lag_ms=5_000))
    append(log, _pairs(20))
    roll(log)
    assert compact(log, now_ms=BASE_TS + 20) is None  # too recent to clean
    assert len(records(log)) == 20
    assert compact(log, now_ms=BASE_TS + 20 + 5_000).records_kept == 5


def test_nothing_at_or_above_the_high_watermark_is_cleaned(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, _pairs(20))
    roll(log)
    log.high_watermark = log.segments[1].base_offset
    plan = plan_cleaning(log, 0, 10_000)
    assert plan.end_offset == log.segments[1].base_offset
    compact(log)
    end = plan.end_offset
    assert [r.offset for r in records(log) if r.offset >= end] == list(range(end, 20))
    assert len([r for r in records(log) if r.offset < end]) <= 5


@pytest.mark.parametrize("codec", [1, 3, 4])  # gzip, lz4, zstd
def test_compressed_batches_are_filtered_and_recompressed_with_their_codec(tmp_path, codec):
    log = open_log(tmp_path / "t-0", compact_config(segment_bytes=4000))
    pairs = _pairs(60, keys=7)
    append(log, pairs, per_batch=10, compression=codec)
    roll(log)
    compact(log)
    assert {r.key: (r.offset, r.value) for r in records(log)} == latest_by_key(pairs)
    assert all(h.attributes & COMPRESSION_MASK == codec for h in batch_headers(log))


def test_batches_keep_their_offsets_epochs_and_producer_fields(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], per_batch=3, epoch=3, producer_id=7)
    append(log, [(b"a", b"2"), (b"x", b"2")], per_batch=2, epoch=4, producer_id=8)
    append(log, [(b"x", b"3"), (b"z", b"3")], per_batch=2, epoch=4, producer_id=8)
    roll(log)
    original = batch_headers(log)
    compact(log)
    cleaned = batch_headers(log)
    # Batch 1 lost "a" and batch 2 lost "x": both kept with every field but count and CRC.
    assert len(cleaned) == 3
    for old, new in zip(original, cleaned):
        assert (
            new.base_offset,
            new.last_offset_delta,
            new.partition_leader_epoch,
            new.producer_id,
            new.producer_epoch,
            new.base_sequence,
            new.base_timestamp,
        ) == (
            old.base_offset,
            old.last_offset_delta,
            old.partition_leader_epoch,
            old.producer_id,
            old.producer_epoch,
            old.base_sequence,
            old.base_timestamp,
        )
    assert [h.records_count for h in cleaned] == [2, 1, 2]
    assert cleaned[2] == original[2]  # untouched batch: same bytes, same CRC


def test_an_emptied_batch_is_dropped_unless_it_is_its_producers_last(tmp_path):
    log = open_log(tmp_path / "t-0")
    append(log, [(b"a", b"1")], per_batch=1, producer_id=5)  # offset 0: dropped
    append(log, [(b"a", b"2")], per_batch=1, producer_id=5)  # offset 1: pid 5's last
    append(log, [(b"a", b"3"), (b"b", b"3")], per_batch=2)  # offsets 2-3: no producer
    roll(log)
    compact(log)
    hs = batch_headers(log)
    assert [(h.base_offset, h.records_count, h.producer_id) for h in hs] == [(1, 0, 5), (2, 2, -1)]
    assert hs[0].last_offset_delta == 0 and hs[0].attributes & COMPRESSION_MASK == 0
    assert [(r.offset, r.value) for r in records(log)] == [(2, b"3"), (3, b"3")]
    # Once the producer writes again, its empty batch has nothing left to remember.
    append(log, [(b"c", b"4")], per_batch=1, producer_id=5)
    roll(log)
    compact(log, checkpoint=4)
    assert [(h.base_offset, h.records_count) for h in batch_headers(log)] == [(2, 2), (4, 1)]


def test_log_append_time_batches_keep_their_broker_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config(message_timestamp_type="LogAppendTime"))
    batch = encode_batch([(b"a", b"1", (), 5), (b"b", b"1", (), 6)])
    log.append_as_leader(batch, 0, now_ms=77_000)
    log.append_as_leader(encode_batch([(b"a", b"2", (), 7)]), 0, now_ms=78_000)
    log.high_watermark = log.log_end_offset
    roll(log)
    compact(log, now_ms=80_000)
    assert [(r.offset, r.timestamp) for r in records(log)] == [(1, 77_000), (2, 78_000)]
    assert batch_headers(log)[0].max_timestamp == 77_000


def test_a_compacted_topic_refuses_records_without_a_key(tmp_path):
    log = open_log(tmp_path / "t-0")
    with pytest.raises(InvalidRecord) as err:
        log.append_as_leader(encode_batch([(b"k", b"v", (), 1), (None, b"v", (), 1)]), 0, now_ms=0)
    assert err.value.code == ErrorCode.INVALID_RECORD and "no key" in err.value.message
    assert log.log_end_offset == 0
    plain = open_log(tmp_path / "u-0", compact_config(cleanup_policy="delete"))
    plain.append_as_leader(encode_batch([(None, b"v", (), 1)]), 0, now_ms=0)


def test_keyless_records_already_in_the_log_are_dropped(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config(cleanup_policy="delete"))
    log.append_as_leader(encode_batch([(None, b"x", (), 1), (b"a", b"1", (), 1)]), 0, now_ms=0)
    log.update_config(compact_config())
    log.high_watermark = log.log_end_offset
    roll(log)
    compact(log)
    assert [(r.offset, r.key) for r in records(log)] == [(1, b"a")]


def test_compact_delete_applies_retention_and_compaction(tmp_path):
    config = compact_config(
        cleanup_policy="compact,delete", retention_ms=50_000, min_cleanable_dirty_ratio=0.0
    )
    manager = LogManager([tmp_path], config, now_ms=0)
    log = manager.get_or_create_log("t", 0, config)
    append(log, _pairs(20), ts=1_000)  # old: retention removes these segments
    roll(log)
    append(log, _pairs(20), ts=100_000)  # recent: compaction keeps one per key
    roll(log)
    now = 100_000 + 10
    assert manager.cleanup(now) >= 1
    assert log.log_start_offset >= 20
    manager.clean_compacted(now)
    assert {r.key: r.offset for r in records(log)} == {b"k%d" % i: 35 + i for i in range(5)}
    manager.close()


def test_log_manager_cleans_dirty_logs_and_checkpoints_how_far(tmp_path):
    config = compact_config(min_cleanable_dirty_ratio=0.5)
    manager = LogManager([tmp_path], config, now_ms=0)
    log = manager.get_or_create_log("t", 0, config)
    other = manager.get_or_create_log("d", 0, compact_config(cleanup_policy="delete"))
    append(log, _pairs(20))
    append(other, _pairs(20))
    roll(log)
    roll(other)
    results = manager.clean_compacted(10_000)
    assert list(results) == [("t", 0)] and results["t", 0].end_offset == 20
    assert len(records(other)) == 20
    assert manager.clean_compacted(10_000) == {}  # nothing dirty
    append(log, _pairs(4))
    roll(log)  # a little dirt: ratio below 0.5
    assert manager.clean_compacted(10_000) == {}
    manager.close()
    text = (tmp_path / "cleaner-offset-checkpoint").read_text().split("\n")
    assert text[:3] == ["0", "1", "t 0 20"]
    reopened = LogManager([tmp_path], config, now_ms=0)
    log = reopened.get_log("t", 0)
    log.high_watermark = log.log_end_offset
    assert plan_cleaning(log, 20, 10_000).first_dirty == 20
    append(log, _pairs(30))
    roll(log)
    result = reopened.clean_compacted(10_000)["t", 0]
    assert result.first_dirty == 20 and result.end_offset == 54
    assert live_map(records(log)) == {b"k%d" % i: b"v%d" % (25 + i) for i in range(5)}
    reopened.close()


def test_max_compaction_lag_cleans_a_log_whatever_its_dirty_ratio(tmp_path):
    config = compact_config(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=60_000)
    manager = LogManager([tmp_path], config, now_ms=0)
    log = manager.get_or_create_log("t", 0, config)
    append(log, _pairs(20))
    roll(log)
    first_batch_ts = BASE_TS + 1  # Kafka measures from the first dirty batch's max timestamp
    assert manager.clean_compacted(first_batch_ts + 60_000) == {}  # the ratio never is > 1.0
    assert manager.clean_compacted(first_batch_ts + 60_001)["t", 0].records_kept == 5
    manager.close()


def test_a_small_offset_map_cleans_in_several_passes(tmp_path):
    log = open_log(tmp_path / "t-0")
    pairs = [(b"k%d" % i, b"v") for i in range(30)] + [(b"k%d" % i, b"w") for i in range(30)]
    append(log, pairs)
    roll(log)
    first = compact(log, max_map_entries=4)
    assert first.end_offset < 60
    checkpoint = first.end_offset
    while checkpoint < 60:
        checkpoint = compact(log, checkpoint=checkpoint, max_map_entries=4).end_offset
    compact(log, checkpoint=0)
    assert {r.key: (r.offset, r.value) for r in records(log)} == latest_by_key(pairs)
