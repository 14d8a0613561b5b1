"""A restart CRC-scans only the segments at or past the recovery point in
recovery-point-offset-checkpoint (a byte damaged before it is not even read), none after a clean
shutdown, and every segment when the checkpoint is missing, damaged or does not fit the log."""

import logging

import pytest
from kraft_log_helpers import make_batch, read_all, split_batches

from kraft.log import file_names
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.log.segment import LogSegment

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=150)
CHECKPOINT = file_names.RECOVERY_POINT_CHECKPOINT


@pytest.fixture
def scanned(monkeypatch):
    """Base offsets of the segments whose bytes recovery reads (LogSegment.recover is the scan)."""
    seen = []
    real = LogSegment.recover

    def spy(self, *args, **kwargs):
        seen.append(self.base_offset)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "recover", spy)
    return seen


def _write(tmp_path, *, flushed_segments=None, clean=False):
    """Five segments of 2-record batches; the first `flushed_segments` flushed (all when None),
    the checkpoint written; then a crash (no close) unless `clean`."""
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    log = manager.get_or_create_log("t", 0)
    for i in range(100):
        log.append_as_leader(make_batch(2, base_ts=100 + i), leader_epoch=1, now_ms=0)
    assert log.segment_count == 5
    segments = list(log.segments)
    log.flush(None if flushed_segments is None else segments[flushed_segments].base_offset)
    batches = split_batches(read_all(log))
    if clean:
        manager.close()
    else:
        manager.checkpoint()
    return segments, batches


def _damage(seg, batch_size, batch_index):
    """Flip a byte inside a record's value: the batch's CRC no longer matches."""
    with open(seg.log_path, "r+b") as f:
        f.seek(batch_index * batch_size + 70)
        byte = f.read(1)
        f.seek(batch_index * batch_size + 70)
        f.write(bytes([byte[0] ^ 0x01]))


def _reopen(tmp_path):
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    return manager, manager.get_log("t", 0)


def test_damage_before_the_recovery_point_is_not_read_at_restart(tmp_path, scanned):
    segments, batches = _write(tmp_path)
    _damage(segments[1], len(batches[0]), 1)
    damaged = segments[1].base_offset // 2 + 1
    _, log = _reopen(tmp_path)
    assert scanned == [segments[-1].base_offset]  # the active segment only
    assert log.recovered_segments == 1
    assert log.log_end_offset == 2 * len(batches) and log.recovery_point == log.log_end_offset
    after = split_batches(read_all(log))
    assert after[damaged] != batches[damaged]  # the damaged batch is still there, unread
    assert after[:damaged] + after[damaged + 1 :] == batches[:damaged] + batches[damaged + 1 :]


def test_damage_past_the_recovery_point_is_cut_at_restart(tmp_path, scanned):
    segments, batches = _write(tmp_path, flushed_segments=2)
    _damage(segments[3], len(batches[0]), 1)
    good = segments[3].base_offset // 2 + 1  # batches before the damaged one
    _, log = _reopen(tmp_path)
    assert scanned == [seg.base_offset for seg in segments[2:4]]  # stops at the damage
    assert split_batches(read_all(log)) == batches[:good]
    assert log.log_end_offset == 2 * good and log.segment_count == 4
    assert not segments[4].log_path.exists()
    assert log.recovery_point == segments[2].base_offset  # the recovered tail is not flushed


def test_without_a_checkpoint_an_unclean_restart_recovers_every_segment(tmp_path, scanned):
    segments, batches = _write(tmp_path)
    (tmp_path / CHECKPOINT).unlink()
    _damage(segments[1], len(batches[0]), 1)
    good = segments[1].base_offset // 2 + 1
    manager, log = _reopen(tmp_path)
    assert scanned == [seg.base_offset for seg in segments[:2]]
    assert split_batches(read_all(log)) == batches[:good]
    assert manager.recovered_logs == 1 and log.recovery_point == 0


def test_a_clean_shutdown_marker_skips_recovery(tmp_path, scanned):
    segments, batches = _write(tmp_path, clean=True)
    assert (tmp_path / file_names.CLEAN_SHUTDOWN).exists()
    _damage(segments[-1], len(batches[0]), 0)  # even in the active segment
    manager, log = _reopen(tmp_path)
    assert scanned == [] and manager.recovered_logs == 0
    assert manager.clean_shutdown[tmp_path] is True
    assert log.log_end_offset == 2 * len(batches)
    assert not (tmp_path / file_names.CLEAN_SHUTDOWN).exists()  # a crash from here is unclean


@pytest.mark.parametrize(
    "content, complaint",
    [
        (b"0\n1\nt 0", "expected 1 lines of 3 fields"),  # torn mid-line
        (b"0\n", "expected a version line and a count line"),  # torn after the version
        (b"", "expected a version line and a count line"),
        (b"\x00\xff\x13\x07garbage", "is not text"),
        (b"7\n1\nt 0 10\n", "unsupported version"),
        (b"0\n1\nt zero 10\n", "must be numbers"),
        (b"0\n1\nt 0 9999\n", "lies past the log's end"),  # parses, but not this log's
    ],
)
@pytest.mark.parametrize("clean", [False, True])
def test_a_damaged_checkpoint_means_full_recovery_with_a_warning(
    tmp_path, scanned, caplog, content, complaint, clean
):
    segments, batches = _write(tmp_path, clean=clean)
    (tmp_path / CHECKPOINT).write_bytes(content)
    _damage(segments[1], len(batches[0]), 1)
    good = segments[1].base_offset // 2 + 1
    with caplog.at_level(logging.WARNING):
        manager, log = _reopen(tmp_path)
    if clean and complaint == "lies past the log's end":
        # The marker says every byte was flushed: the recovery point is not needed at all.
        assert scanned == [] and log.log_end_offset == 2 * len(batches)
        return
    assert complaint in caplog.text and "recovered" in caplog.text
    assert scanned == [seg.base_offset for seg in segments[:2]]
    assert manager.clean_shutdown[tmp_path] is False
    assert split_batches(read_all(log)) == batches[:good]
    assert log.recovery_point == 0


def test_a_damaged_leader_epoch_checkpoint_is_rebuilt_by_a_full_recovery(tmp_path, scanned, caplog):
    segments, batches = _write(tmp_path)
    epochs = tmp_path / "t-0" / file_names.LEADER_EPOCH_CHECKPOINT
    assert epochs.read_text() == "0\n1\n1 0\n"
    epochs.write_bytes(b"0\n1\n\xff\xfe")
    with caplog.at_level(logging.WARNING):
        _, log = _reopen(tmp_path)
    assert "leader-epoch-checkpoint: byte 4 is not text" in caplog.text
    assert scanned == [seg.base_offset for seg in segments]
    assert split_batches(read_all(log)) == batches
    assert epochs.read_text() == "0\n1\n1 0\n"
