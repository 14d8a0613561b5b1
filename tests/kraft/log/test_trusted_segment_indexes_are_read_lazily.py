"""Segments wholly below the recovery point open with only their index files' size and last
entry checked (Kafka's lazy index); the entries are read at the first lookup, and an index that
fails the check then is rebuilt from the log, as an open would have done."""

import logging
import struct

from kraft_log_helpers import make_batch, read_all, split_batches

from kraft.log.index_file import IndexFile
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=150)


def _flushed_log(path):
    log = Log.open(path, CONFIG, now_ms=0)
    for i in range(100):
        log.append_as_leader(make_batch(2, base_ts=100 + i), leader_epoch=1, now_ms=0)
    log.flush()
    return log, split_batches(read_all(log))  # then a crash: no close


def _files_read(monkeypatch):
    read = []
    real = IndexFile._fill

    def spy(self, limit):
        read.append(self.path.name)
        return real(self, limit)

    monkeypatch.setattr(IndexFile, "_fill", spy)
    return read


def test_indexes_below_the_recovery_point_are_read_at_first_lookup_only(tmp_path, monkeypatch):
    log, batches = _flushed_log(tmp_path / "t-0")
    read = _files_read(monkeypatch)
    reopened = Log.open(tmp_path / "t-0", CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    assert reopened.recovered_segments == 1
    assert read == []  # the active segment is scanned, the rest only stat'ed
    second = reopened.segments[1]
    offset = second.base_offset + 5
    assert reopened.read(offset, 100).records == batches[offset // 2]
    assert read == [second.offset_index.path.name]
    assert reopened.offset_for_timestamp(160)[0] == 119  # batch 59 holds times 159, 160
    assert split_batches(read_all(reopened)) == batches


def test_an_index_damaged_in_the_middle_is_rebuilt_at_first_lookup(tmp_path, caplog):
    log, batches = _flushed_log(tmp_path / "t-0")
    seg = log.segments[1]
    good = seg.offset_index.path.read_bytes()
    assert len(good) >= 3 * 8
    damaged = bytearray(good)
    struct.pack_into(">ii", damaged, 8, 10**6, 10**6)  # the 2nd entry; the last still fits
    seg.offset_index.path.write_bytes(bytes(damaged))
    reopened = Log.open(tmp_path / "t-0", CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    assert reopened.recovered_segments == 1  # the damage is not seen at open
    offset = seg.base_offset + 5
    with caplog.at_level(logging.WARNING):
        assert reopened.read(offset, 100).records == batches[offset // 2]
    assert "index of this segment is damaged; rebuilding" in caplog.text
    reopened.close()
    assert seg.offset_index.path.read_bytes() == good
    assert (
        split_batches(read_all(Log.open(tmp_path / "t-0", CONFIG, recovery_point=0, now_ms=0)))
        == batches
    )


def test_an_index_whose_last_entry_is_damaged_is_rebuilt_at_open(tmp_path):
    log, batches = _flushed_log(tmp_path / "t-0")
    seg = log.segments[1]
    good = seg.offset_index.path.read_bytes()
    damaged = bytearray(good)
    struct.pack_into(">ii", damaged, len(good) - 8, 3, 10**6)  # past the log's end
    seg.offset_index.path.write_bytes(bytes(damaged))
    reopened = Log.open(tmp_path / "t-0", CONFIG, recovery_point=log.log_end_offset, now_ms=0)
    assert reopened.recovered_segments == 2
    assert seg.offset_index.path.read_bytes() == good
    assert split_batches(read_all(reopened)) == batches
