"""A truncation below the recovery point rewrites recovery-point-offset-checkpoint before the
log is appended to again (Kafka does the same), so offsets written anew after it are scanned
after a crash, never trusted as flushed because an older checkpoint said so."""

import pytest
from kraft_log_helpers import make_batch, read_all, split_batches

from kraft.log import file_names
from kraft.log.checkpoint import read_offset_checkpoint
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager, write_checkpoints

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=150)


def _flushed(tmp_path):
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    log = manager.get_or_create_log("t", 0)
    for i in range(100):
        log.append_as_leader(make_batch(2, base_ts=100 + i), leader_epoch=1, now_ms=0)
    log.flush()
    manager.checkpoint()
    return manager, log


def _recovery_point(tmp_path):
    return read_offset_checkpoint(tmp_path / file_names.RECOVERY_POINT_CHECKPOINT)[("t", 0)]


def test_offsets_rewritten_after_a_truncation_are_recovered_after_a_crash(tmp_path):
    manager, log = _flushed(tmp_path)
    assert _recovery_point(tmp_path) == 200
    log.truncate_to(40)
    assert _recovery_point(tmp_path) == 40
    for i in range(100):  # offsets 40 to 239, past the old 200: not flushed
        log.append_as_leader(make_batch(2, base_ts=500 + i), leader_epoch=2, now_ms=0)
    batches = split_batches(read_all(log))
    seg = next(s for s in log.segments if s.base_offset > 60)
    assert seg.next_offset < 200  # wholly below the recovery point before the cut
    with open(seg.log_path, "r+b") as f:  # a torn write inside the rewritten offsets
        f.seek(len(batches[0]) + 70)
        byte = f.read(1)
        f.seek(len(batches[0]) + 70)
        f.write(bytes([byte[0] ^ 0x01]))
    reopened = LogManager([tmp_path], CONFIG, now_ms=0).get_log("t", 0)  # after a crash
    good = seg.base_offset // 2 + 1
    assert split_batches(read_all(reopened)) == batches[:good]


def test_a_checkpoint_taken_before_a_truncation_cannot_raise_it_again(tmp_path):
    manager, log = _flushed(tmp_path)
    taken = manager.checkpoint_offsets()  # the periodic write, about to run in a thread
    log.truncate_to(40)
    assert write_checkpoints(taken) == []
    assert _recovery_point(tmp_path) == 40


def test_a_truncation_whose_checkpoint_cannot_be_written_fails_like_a_disk_error(
    tmp_path, monkeypatch
):
    manager, log = _flushed(tmp_path)

    def full(path, offsets):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("kraft.log.log_dir_checkpoints.write_offset_checkpoint", full)
    with pytest.raises(OSError, match="No space left"):
        log.truncate_to(40)
