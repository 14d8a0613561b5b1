from kraft_log_helpers import headers, make_batch, read_all, split_batches

from clients.record.batch_header import parse_header
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def _fill(log, count=60, per_batch=3):
    sent = []
    for i in range(count):
        info = log.append_as_leader(
            make_batch(per_batch, base_ts=1000 + i), leader_epoch=5, now_ms=0
        )
        sent.append((info.first_offset, info.last_offset))
    return sent


def test_round_trip_across_many_segments(tmp_path):
    log = Log.open(tmp_path / "t-0", SMALL, now_ms=0)
    sent = _fill(log)
    assert log.segment_count > 5
    assert log.log_end_offset == 180
    assert sent[0] == (0, 2) and sent[-1] == (177, 179)
    got = headers(read_all(log))
    assert [(h.base_offset, h.last_offset) for h in got] == sent
    assert all(h.partition_leader_epoch == 5 for h in got)


def test_read_starts_at_batch_containing_mid_batch_offset(tmp_path):
    log = Log.open(tmp_path / "t-0", SMALL, now_ms=0)
    _fill(log)
    for offset in (1, 2, 44, 100, 179):
        first = headers(log.read(offset, 10_000).records)[0]
        assert first.base_offset <= offset <= first.last_offset


def test_max_bytes_and_max_offset(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=100), now_ms=0)
    _fill(log)
    one = len(make_batch(3))
    data = log.read(0, one * 4 + one // 2).records
    assert len(data) == one * 4  # whole batches only
    data = log.read(0, 1 << 20, max_offset=31).records  # batch 30..32 holds 31: excluded
    assert [h.last_offset for h in headers(data)][-1] == 29
    assert log.read(30, 1 << 20, max_offset=31).records == b""
    assert log.read(log.log_end_offset, 100).records == b""


def test_min_one_batch_returns_one_oversized_batch(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    big = make_batch(50, value=b"x" * 100)
    log.append_as_leader(big, 0, now_ms=0)
    data = log.read(0, 10).records
    assert len(split_batches(data)) == 1 and len(data) == len(big)
    assert log.read(0, 10, min_one_batch=False).records == b""
    assert parse_header(data).records_count == 50


def test_out_of_range_reads_raise(tmp_path):
    import pytest

    from kraft.log.log import OffsetOutOfRange

    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    log.append_as_leader(make_batch(2), 0, now_ms=0)
    with pytest.raises(OffsetOutOfRange, match="out of range"):
        log.read(3, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_bytes_on_disk_are_the_appended_bytes_with_offsets_set(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    batch = make_batch(4)
    log.append_as_leader(batch, 0, now_ms=0)
    info = log.append_as_leader(batch, 0, now_ms=0)
    assert info.first_offset == 4 and info.num_records == 4 and info.valid_bytes == len(batch)
    second = split_batches(log.read(4, 1000).records)[0]
    assert second[8:12] == batch[8:12] and second[16:] == batch[16:]  # only offset/epoch changed
    assert parse_header(second).base_offset == 4
    from clients.record.batch_header import validate_batch

    validate_batch(second)
