from kraft_log_helpers import headers, make_batch, read_all, split_batches

from kraft.log.log import Log
from kraft.log.log_config import LogConfig

CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)


def _log(tmp_path, n=40):
    log = Log.open(tmp_path / "t-0", CONFIG, now_ms=0)
    for i in range(n):
        log.append_as_leader(make_batch(2, base_ts=1000 + i), leader_epoch=i // 10, now_ms=0)
    return log


def test_truncate_across_segment_boundaries_then_append(tmp_path):
    log = _log(tmp_path)
    before = split_batches(read_all(log))
    segments_before = log.segment_count
    cut = log.segments[2].base_offset - 4  # inside segment 1, two segments dropped
    log.truncate_to(cut)
    assert log.log_end_offset == cut
    assert log.segment_count == 2 < segments_before
    assert split_batches(read_all(log)) == before[: cut // 2]
    assert log.leader_epoch_cache.entries[-1].start_offset < cut
    info = log.append_as_leader(make_batch(3), 9, now_ms=0)
    assert info.first_offset == cut
    assert [h.base_offset for h in headers(read_all(log))][-2:] == [cut - 2, cut]
    assert log.leader_epoch_cache.entries[-1] == (9, cut)
    # Index lookups still work in the truncated-then-extended segment.
    assert headers(log.read(cut + 1, 1000).records)[0].base_offset == cut
    # And its index file is exactly what a rebuild from the log produces.
    active = log.segments[-1]
    active.offset_index.flush()  # entries reach the file at flush or close
    index_bytes = active.offset_index.path.read_bytes()
    assert index_bytes
    active.offset_index.path.unlink()
    rebuilt = Log.open(log.dir, CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    rebuilt.segments[-1].offset_index.flush()
    assert rebuilt.segments[-1].offset_index.path.read_bytes() == index_bytes
    assert split_batches(read_all(rebuilt)) == split_batches(read_all(log))


def test_truncate_mid_batch_drops_the_whole_batch(tmp_path):
    log = _log(tmp_path, n=5)
    log.truncate_to(5)  # batch 4..5 goes whole
    assert log.log_end_offset == 4


def test_truncate_at_or_past_end_is_a_no_op_and_to_zero_empties(tmp_path):
    log = _log(tmp_path, n=5)
    log.truncate_to(10)
    assert log.log_end_offset == 10
    log.high_watermark = 8
    log.truncate_to(0)
    assert (log.log_end_offset, log.segment_count, log.high_watermark) == (0, 1, 0)
    assert log.leader_epoch_cache.entries == []


def test_truncate_fully_and_start_at(tmp_path):
    log = _log(tmp_path)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.segment_count) == (500, 500, 1)
    assert log.append_as_follower(make_batch(1, base_offset=500, epoch=3)).first_offset == 500
    assert sorted(p.name for p in log.dir.glob("*.log")) == ["00000000000000000500.log"]
