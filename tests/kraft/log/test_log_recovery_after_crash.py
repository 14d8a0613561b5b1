"""A crash is simulated by never calling close(): reopening with recovery_point=0 scans every
segment, keeps each complete valid batch before the damage and nothing after it."""

import os

from kraft_log_helpers import make_batch, read_all, split_batches

from kraft.log import file_names
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=150)


def _crashed_log(path, batches=100):
    log = Log.open(path, CONFIG, now_ms=0)
    for i in range(batches):
        log.append_as_leader(make_batch(2, base_ts=100 + i), leader_epoch=1 + i // 25, now_ms=0)
    data = read_all(log)
    # No close(): file handles simply go away as in a crash.
    return log, split_batches(data)


def _reopen(path):
    return Log.open(path, CONFIG, recovery_point=0, now_ms=0)


def test_torn_tail_mid_batch_is_cut(tmp_path):
    path = tmp_path / "t-0"
    log, batches = _crashed_log(path)
    last_seg = log.segments[-1].log_path
    size = os.path.getsize(last_seg)
    os.truncate(last_seg, size - 7)
    kept_in_last = (size - 7) // len(batches[0])
    reopened = _reopen(path)
    expected = batches[: len(batches) - (size // len(batches[0])) + kept_in_last]
    assert split_batches(read_all(reopened)) == expected
    assert reopened.log_end_offset == 2 * len(expected)
    assert reopened.recovered_segments == reopened.segment_count
    info = reopened.append_as_leader(make_batch(1), 9, now_ms=0)
    assert info.first_offset == 2 * len(expected)


def test_flipped_byte_in_middle_batch_drops_it_and_everything_after(tmp_path):
    path = tmp_path / "t-0"
    log, batches = _crashed_log(path)
    seg = log.segments[2]
    batch_size = len(batches[0])
    with open(seg.log_path, "r+b") as f:  # a byte inside the 2nd batch of segment 2
        f.seek(batch_size + 40)
        byte = f.read(1)
        f.seek(batch_size + 40)
        f.write(bytes([byte[0] ^ 0x01]))
    first_offset_of_seg = seg.base_offset
    reopened = _reopen(path)
    good = first_offset_of_seg // 2 + 1  # batches before the damaged one
    assert split_batches(read_all(reopened)) == batches[:good]
    assert reopened.log_end_offset == 2 * good
    assert reopened.segment_count == 3
    assert not file_names.log_file(path, log.segments[3].base_offset).exists()
    # The epoch cache forgets epochs that began in the lost part.
    assert reopened.leader_epoch_cache.entries[-1].start_offset < reopened.log_end_offset
    reopened.append_as_leader(make_batch(1), 9, now_ms=0)
    assert split_batches(read_all(reopened))[:good] == batches[:good]


def test_deleted_indexes_are_rebuilt_identically(tmp_path):
    path = tmp_path / "t-0"
    log, batches = _crashed_log(path)
    seg = log.segments[1]
    index_bytes = seg.offset_index.path.read_bytes()
    time_bytes = seg.time_index.path.read_bytes()
    assert index_bytes and time_bytes
    seg.offset_index.path.unlink()
    seg.time_index.path.unlink()
    reopened = Log.open(path, CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    assert reopened.recovered_segments == 2  # the one without indexes, and the active one
    rebuilt = reopened.segments[1]
    assert rebuilt.offset_index.path.read_bytes() == index_bytes
    # The rebuilt time index gains the sealing entry (max timestamp) of an inactive segment.
    assert rebuilt.time_index.path.read_bytes().startswith(time_bytes)
    assert split_batches(read_all(reopened)) == batches
    mid = rebuilt.base_offset + 3
    assert reopened.read(mid, 100).records == batches[mid // 2]


def test_garbage_index_is_rebuilt(tmp_path):
    path = tmp_path / "t-0"
    log, batches = _crashed_log(path)
    log.segments[0].offset_index.path.write_bytes(b"\xff" * 13)
    reopened = Log.open(path, CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    assert split_batches(read_all(reopened)) == batches
    assert reopened.read(5, 100).records == batches[2]
