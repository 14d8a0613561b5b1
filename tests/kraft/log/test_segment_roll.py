from kraft_log_helpers import make_batch

from kraft.log.log import Log
from kraft.log.log_config import LogConfig


def test_segment_ms_rolls_with_a_fake_clock(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_ms=1000), now_ms=0)
    log.append_as_leader(make_batch(1), 0, now_ms=5_000)
    log.append_as_leader(make_batch(1), 0, now_ms=6_000)  # exactly segment.ms: no roll
    assert log.segment_count == 1
    log.append_as_leader(make_batch(1), 0, now_ms=6_001)
    assert log.segment_count == 2
    assert log.segments[-1].base_offset == 2
    log.maybe_roll(now_ms=7_000)
    assert log.segment_count == 2
    log.maybe_roll(now_ms=7_002)
    assert log.segment_count == 3 and log.segments[-1].base_offset == 3
    log.maybe_roll(now_ms=100_000)  # empty active: nothing to roll
    assert log.segment_count == 3


def test_size_roll_splits_one_append_across_segments(tmp_path):
    batch = make_batch(2)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=len(batch) * 3), now_ms=0)
    info = log.append_as_leader(batch * 10, 0, now_ms=0)
    assert (info.first_offset, info.last_offset, info.num_batches) == (0, 19, 10)
    assert [seg.base_offset for seg in log.segments] == [0, 6, 12, 18]
    assert all(seg.size <= len(batch) * 3 for seg in log.segments)


def test_rolled_segments_are_flushed_by_maybe_flush(tmp_path):
    batch = make_batch(2)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=len(batch) * 2), now_ms=0)
    log.append_as_leader(batch * 5, 0, now_ms=0)
    assert log.recovery_point == 0
    log.maybe_flush(now_ms=1)
    assert log.recovery_point == log.segments[-1].base_offset == 8


def test_flush_messages_flushes_on_append(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(flush_messages=3), now_ms=0)
    log.append_as_leader(make_batch(2), 0, now_ms=0)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch(2), 0, now_ms=0)
    assert log.recovery_point == 4


def test_log_append_time_is_stamped_inside_the_crc(tmp_path):
    from clients.record.batch_header import validate_batch

    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), now_ms=0)
    info = log.append_as_leader(make_batch(3, base_ts=5), 0, now_ms=777)
    assert info.log_append_time == 777 and info.max_timestamp == 777
    header = validate_batch(log.read(0, 1000).records)
    assert header.max_timestamp == 777 and header.attributes & 0x08


def test_a_due_flush_moves_the_recovery_point_only_once_its_fsyncs_are_done(tmp_path):
    """The node fsyncs in a thread: deciding what is owed must not move the recovery point (a
    checkpoint taken meanwhile would claim unsynced data), and `flushed` never passes the end."""
    log = Log.open(tmp_path / "t-0", LogConfig(flush_ms=5), now_ms=0)
    for i in range(5):
        log.append_as_leader(make_batch(1), 0, now_ms=i)
    assert log.recovery_point == 0
    pending = log.due_flush(now_ms=10)
    assert pending is not None and pending.offset == log.log_end_offset
    assert log.recovery_point == 0  # owed, not yet done
    pending.fsync()
    log.truncate_to(2)  # a KIP-101 truncation while the fsync ran
    log.flushed(pending)
    assert log.recovery_point == 2
    assert log.due_flush(now_ms=20) is None  # nothing owed any more


def test_a_roll_leaves_its_fsyncs_to_the_flusher(tmp_path, monkeypatch):
    """Rolling happens inside an append on the node's loop: no fsync there. The flush it owes
    (what the node's flusher thread runs) covers the sealed segment's time index too."""
    import os

    batch = make_batch(2)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=len(batch) * 2), now_ms=0)
    log.append_as_leader(batch, 0, now_ms=0)  # (the epoch's first append checkpoints it)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        os,
        "fsync",
        lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))[1],
    )
    log.append_as_leader(batch * 2, 0, now_ms=0)
    assert log.segment_count == 2 and synced == []
    pending = log.due_flush(now_ms=0)
    pending.fsync()
    log.flushed(pending)
    first = log.segments[0]
    assert str(first.time_index.path) in synced and str(first.log_path) in synced
    assert log.recovery_point == log.segments[1].base_offset
