"""A log whose files were damaged under it (a segment deleted, a baseOffset byte flipped, bytes
corrupted below the recovery point) raises SegmentCorrupt at open or at read: a read never skips
the missing offsets nor answers "no data" below the high watermark, and nothing flushed is cut."""

import os

import pytest
from kraft_log_helpers import make_batch

from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.segment import SegmentCorrupt

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def _log_of_segments(path, batches=40, config=CONFIG):
    log = Log.open(path, config, now_ms=0)
    for i in range(batches):
        log.append_as_leader(make_batch(2, base_ts=100 + i), leader_epoch=1, now_ms=0)
    log.high_watermark = log.log_end_offset
    assert log.segment_count >= 4
    return log


def _reopen_clean(path, log, config=CONFIG):
    end = log.log_end_offset
    log.flush()
    log.close()
    return Log.open(path, config, recovery_point=end, now_ms=0, clean_shutdown=True)


def _flip(path, position, mask=0x01):
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ mask]))


def test_a_deleted_middle_segment_is_a_gap_at_open_and_an_error_at_read(tmp_path):
    log = _log_of_segments(tmp_path / "t-0")
    doomed = log.segments[1]
    missing = (doomed.base_offset, doomed.next_offset)
    os.unlink(doomed.log_path)
    reopened = _reopen_clean(tmp_path / "t-0", log)
    assert reopened.offset_gaps == [missing]
    reopened.high_watermark = reopened.log_end_offset
    for offset in (missing[0], missing[1] - 1):
        with pytest.raises(
            SegmentCorrupt, match=f"offsets {offset} to {missing[1] - 1} .* missing"
        ):
            reopened.read(offset, 1 << 20, max_offset=reopened.high_watermark)
    # Offsets on either side still read.
    assert reopened.read(missing[0] - 1, 1 << 20).records
    assert reopened.read(missing[1], 1 << 20).records


def test_a_deleted_middle_segment_is_found_after_a_crash_too(tmp_path):
    log = _log_of_segments(tmp_path / "t-0")
    doomed = log.segments[2]
    missing = (doomed.base_offset, doomed.next_offset)
    os.unlink(doomed.log_path)
    reopened = Log.open(tmp_path / "t-0", CONFIG, recovery_point=0, now_ms=0)
    assert reopened.offset_gaps == [missing]


def test_a_compacted_log_may_have_gaps(tmp_path):
    config = LogConfig(segment_bytes=1000, index_interval_bytes=150, cleanup_policy="compact")
    log = _log_of_segments(
        tmp_path / "t-0", config=LogConfig(segment_bytes=1000, index_interval_bytes=150)
    )
    doomed = log.segments[1]
    os.unlink(doomed.log_path)
    reopened = _reopen_clean(tmp_path / "t-0", log, config)
    reopened.high_watermark = reopened.log_end_offset
    data = reopened.read(doomed.base_offset, 1 << 20).records
    assert int.from_bytes(data[:8], "big") == doomed.next_offset


def test_a_flipped_base_offset_byte_in_an_old_segment_fails_the_fetch_not_empties_it(tmp_path):
    log = _log_of_segments(tmp_path / "t-0")
    old = log.segments[1]
    _flip(old.log_path, 0, 0x40)  # the top byte of the first batch's baseOffset
    with pytest.raises(SegmentCorrupt, match="baseOffset is damaged"):
        log.read(old.base_offset, 1 << 20, max_offset=log.high_watermark)


def test_a_small_base_offset_change_is_caught_by_the_next_batch(tmp_path):
    log = _log_of_segments(tmp_path / "t-0")
    old = log.segments[1]
    _flip(old.log_path, 7, 0x01)  # base offset +1 (or -1): the next batch overlaps it
    with pytest.raises(SegmentCorrupt):
        log.read(old.base_offset + 1, 1 << 20, max_offset=log.high_watermark)


def test_a_damaged_base_offset_below_the_recovery_point_refuses_to_open_and_cuts_nothing(tmp_path):
    path = tmp_path / "t-0"
    log = _log_of_segments(path)
    old = log.segments[1]
    sizes = [os.path.getsize(seg.log_path) for seg in log.segments]
    _flip(old.log_path, 0, 0x40)
    with pytest.raises(SegmentCorrupt, match="damaged"):
        _reopen_clean(path, log)
    assert sorted(os.path.getsize(p) for p in path.glob("*.log")) == sorted(sizes)


def test_corrupt_bytes_below_the_recovery_point_refuse_to_open_and_cut_nothing(tmp_path):
    path = tmp_path / "t-0"
    log = _log_of_segments(path)
    old = log.segments[1]
    end = log.log_end_offset
    log.flush()
    sizes = sorted(os.path.getsize(seg.log_path) for seg in log.segments)
    _flip(old.log_path, 70)  # inside the first batch's records: a CRC mismatch
    os.unlink(old.offset_index.path)  # so the open CRC-scans this segment
    # A crash after the flush: the damage is below the recovery point.
    with pytest.raises(SegmentCorrupt, match="below the recovery point"):
        Log.open(path, CONFIG, recovery_point=end, now_ms=0)
    assert sorted(os.path.getsize(p) for p in path.glob("*.log")) == sizes
