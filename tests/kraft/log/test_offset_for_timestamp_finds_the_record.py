"""ListOffsets by timestamp answers the first record whose timestamp is at or after the target,
with that record's timestamp (Kafka scans the records of the batch the indexes lead to), not
the base offset of the batch that holds it; in compressed batches too, and never below the
log start offset."""

from __future__ import annotations

import pytest

from clients.record.codec import encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

GZIP, ZSTD = 1, 4


def records(first_ts: int, count: int, step: int = 10):
    return [(b"k", b"v%d" % i, (), first_ts + i * step) for i in range(count)]


@pytest.mark.parametrize("compression", [0, GZIP, ZSTD])
def test_the_record_at_or_after_the_timestamp_not_its_batch(tmp_path, compression):
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    for first_ts in (1000, 2000):  # two batches of 10 records: 1000, 1010, ... 1090; 2000 ...
        log.append_as_leader(
            encode_batch(records(first_ts, 10), compression=compression), 0, now_ms=0
        )
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1035) == (4, 1040)  # the batch's base offset was 0
    assert log.offset_for_timestamp(1090) == (9, 1090)
    assert log.offset_for_timestamp(1091) == (10, 2000)
    assert log.offset_for_timestamp(2055) == (16, 2060)
    assert log.offset_for_timestamp(2091) is None


def test_records_below_the_log_start_offset_are_skipped(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    log.append_as_leader(encode_batch(records(1000, 10)), 0, now_ms=0)
    log.high_watermark = 10
    log.maybe_increment_log_start_offset(6)  # e.g. DeleteRecords: the batch still holds 0..5
    assert log.offset_for_timestamp(1000) == (6, 1060)
    assert log.offset_for_timestamp(1075) == (8, 1080)


def test_log_append_time_batches_answer_the_broker_time(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), now_ms=0)
    log.append_as_leader(encode_batch(records(1000, 5)), 0, now_ms=5000)
    assert log.offset_for_timestamp(1020) == (0, 5000)
