"""After a clean close the reopen trusts the files (no CRC scan: a flipped CRC byte goes
unnoticed); without the marker it scans from the recovery point and cuts the bad batch."""

from kraft_log_helpers import make_batch, read_all, split_batches

from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager


def _write_and_close(tmp_path, *, clean: bool):
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    log = manager.get_or_create_log("t", 0)
    for _ in range(5):
        log.append_as_leader(make_batch(2), 1, now_ms=0)
    log.high_watermark = 10
    batches = split_batches(read_all(log))
    seg_path = log.segments[-1].log_path
    if clean:
        manager.close()
    else:
        manager.checkpoint()  # recovery point 0: nothing was flushed
    with open(seg_path, "r+b") as f:  # flip a byte of the last batch's CRC field
        f.seek(len(batches[0]) * 4 + 18)
        byte = f.read(1)
        f.seek(len(batches[0]) * 4 + 18)
        f.write(bytes([byte[0] ^ 0xFF]))
    return batches


def test_reopen_after_clean_close_does_no_recovery_scan(tmp_path):
    _write_and_close(tmp_path, clean=True)
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    log = manager.get_log("t", 0)
    assert manager.clean_shutdown[tmp_path] is True
    assert manager.recovered_logs == 0 and log.recovered_segments == 0
    assert log.log_end_offset == 10 and log.high_watermark == 10
    assert len(split_batches(read_all(log))) == 5  # the bad CRC was not looked at
    assert not (tmp_path / ".kafka_cleanshutdown").exists()


def test_reopen_after_unclean_close_detects_the_bad_crc(tmp_path):
    batches = _write_and_close(tmp_path, clean=False)
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    log = manager.get_log("t", 0)
    assert manager.clean_shutdown[tmp_path] is False
    assert manager.recovered_logs == 1 and log.recovered_segments == 1
    assert split_batches(read_all(log)) == batches[:4]
    assert log.log_end_offset == 8 and log.high_watermark == 8


def test_missing_recovery_checkpoint_recovers_everything(tmp_path):
    _write_and_close(tmp_path, clean=True)
    (tmp_path / "recovery-point-offset-checkpoint").unlink()
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    assert manager.recovered_logs == 1
    assert manager.get_log("t", 0).log_end_offset == 8


def test_delete_log_and_log_dir_choice(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, LogConfig(), now_ms=0)
    one = manager.get_or_create_log("t", 0)
    two = manager.get_or_create_log("t", 1)
    assert {one.dir.parent, two.dir.parent} == set(dirs)
    manager.delete_log("t", 0)
    assert manager.get_log("t", 0) is None and not one.dir.exists()
    assert set(manager.logs()) == {("t", 1)}
    manager.close()
    reopened = LogManager(dirs, LogConfig(), now_ms=0)
    assert set(reopened.logs()) == {("t", 1)}
