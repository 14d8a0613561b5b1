from kraft_log_helpers import make_batch

from kraft.log.log import Log
from kraft.log.log_config import LogConfig


def _log(tmp_path, config, n=30):
    log = Log.open(tmp_path / "t-0", config, now_ms=0)
    for i in range(n):  # batch i: offsets 2i, 2i+1; timestamps 1000 * i (+1)
        log.append_as_leader(make_batch(2, base_ts=1000 * i), 0, now_ms=0)
    log.high_watermark = log.log_end_offset
    return log


def test_retention_ms_deletes_old_segments_only(tmp_path):
    log = _log(tmp_path, LogConfig(segment_bytes=500, retention_ms=10_000))
    bases = [seg.base_offset for seg in log.segments]
    now = 25_000  # segments whose newest timestamp is before 15_000 expire
    deleted = log.delete_old_segments(now)
    assert deleted >= 1
    assert all(seg.max_timestamp >= now - 10_000 for seg in log.segments)
    assert log.log_start_offset == log.segments[0].base_offset == bases[deleted]
    assert not (log.dir / f"{bases[0]:020d}.log").exists()


def test_retention_never_deletes_the_active_segment(tmp_path):
    log = _log(tmp_path, LogConfig(segment_bytes=500, retention_ms=1, retention_bytes=0))
    count = log.segment_count
    assert log.delete_old_segments(10**12) == count - 1
    assert log.segment_count == 1
    assert log.log_end_offset == 60 and log.log_start_offset == log.segments[0].base_offset
    assert log.read(log.log_start_offset, 10_000).records


def test_retention_bytes_deletes_oldest_while_log_stays_within_limit(tmp_path):
    log = _log(tmp_path, LogConfig(segment_bytes=500, retention_bytes=1000))
    deleted = log.delete_old_segments(0)
    assert deleted >= 1
    assert log.size_in_bytes() >= 1000 - 500
    assert log.size_in_bytes() - log.segments[0].size < 1000


def test_retention_stops_at_the_high_watermark(tmp_path):
    log = _log(tmp_path, LogConfig(segment_bytes=500, retention_ms=1))
    log.high_watermark = log.segments[1].base_offset
    assert log.delete_old_segments(10**12) == 1


def test_explicit_log_start_offset_increase_deletes_segments_below_it(tmp_path):
    log = _log(tmp_path, LogConfig(segment_bytes=500))
    target = log.segments[2].base_offset + 1
    log.maybe_increment_log_start_offset(target)
    assert log.delete_old_segments(0) == 2
    assert log.log_start_offset == target
    assert log.segments[0].base_offset == target - 1
