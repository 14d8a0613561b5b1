"""FileRaftLog across restarts: a power loss keeps exactly the flushed entries, a torn tail is cut
at the last whole entry, the log start and epochs come back from the snapshot files."""

import os

from raft_storage_harness import entries

from kraft.raft.disk import FileRaftLog, metadata_log_dir
from kraft.raft.log import Entry, EpochEndOffset, OffsetAndEpoch
from kraft.raft.snapshot_files import write_snapshot

SEGMENT = "00000000000000000000.log"


def open_log(tmp_path, **kwargs):
    return FileRaftLog(metadata_log_dir(tmp_path), now_ms=0, **kwargs)


def test_power_loss_keeps_exactly_the_flushed_entries(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1] * 5))
    log.flush()
    durable = os.path.getsize(log.dir / SEGMENT)
    log.append(entries(5, [2] * 3))
    log.engine.close()
    os.truncate(log.dir / SEGMENT, durable)  # the page cache is gone
    log = open_log(tmp_path)
    assert log.read(0, 100) == entries(0, [1] * 5)
    assert (log.log_end_offset, log.flushed_offset, log.last_fetched_epoch) == (5, 5, 1)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(1, 5)


def test_a_process_crash_keeps_what_reached_the_page_cache(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1, 2]))
    log.engine.close()  # no flush, no clean shutdown
    log = open_log(tmp_path)
    assert log.read(0, 100) == entries(0, [1, 1, 2])
    assert log.flushed_offset == 3  # made durable at open, before anything acts on it


def test_a_torn_tail_is_cut_at_the_last_whole_entry(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1, 2, 2, 3]))
    log.flush()
    whole = os.path.getsize(log.dir / SEGMENT)
    log.engine.close()
    os.truncate(log.dir / SEGMENT, whole - 7)  # the last batch half-written
    log = open_log(tmp_path)
    assert log.read(0, 100) == entries(0, [1, 1, 2, 2])
    assert (log.log_end_offset, log.last_fetched_epoch) == (4, 2)
    assert log.end_offset_for_epoch(3) == EpochEndOffset(2, 4)
    log.append([Entry(4, 3, b"again")])
    assert log.read(4, 1) == [Entry(4, 3, b"again")]


def test_a_corrupt_last_entry_is_cut_too(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1, 1]))
    log.flush()
    log.engine.close()
    path = log.dir / SEGMENT
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # inside the CRC-covered records of the last batch
    path.write_bytes(bytes(data))
    log = open_log(tmp_path)
    assert log.read(0, 100) == entries(0, [1, 1])


def test_reopen_restores_log_start_and_epochs_from_the_snapshot(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1, 2, 2, 3, 3]))
    log.create_snapshot(OffsetAndEpoch(3, 2), b"state@3")
    log.close()
    log = open_log(tmp_path)
    assert log.latest_snapshot_id == OffsetAndEpoch(3, 2)
    assert (log.log_start_offset, log.log_end_offset) == (3, 6)
    assert log.epoch_at(2) == 2 and log.epoch_at(3) == 2
    assert log.read(3, 10) == entries(3, [2, 3, 3])
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 4)


def test_create_snapshot_deletes_segments_wholly_below_it(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    log.append(entries(0, [1] * 20))
    before = sorted(p.name for p in log.dir.glob("*.log"))
    assert len(before) > 3
    log.create_snapshot(OffsetAndEpoch(15, 1), b"s")
    after = sorted(p.name for p in log.dir.glob("*.log"))
    assert before[0] not in after
    bases = [int(name[:20]) for name in after]
    assert bases[0] <= 15 < (bases[1] if len(bases) > 1 else 21)  # only the segment holding 15 on
    assert log.read(15, 100) == entries(15, [1] * 5)
    log.close()
    assert open_log(tmp_path, segment_bytes=300).log_start_offset == 15


def test_a_crash_inside_install_snapshot_drops_the_older_history(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1] * 10))
    log.flush()
    log.engine.close()
    # install_snapshot wrote and renamed the snapshot, then the process died before truncating.
    write_snapshot(log.dir, OffsetAndEpoch(5, 2), b"leader state")
    log = open_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert log.last_fetched_epoch == 2


def test_install_snapshot_keeps_only_that_snapshot(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1] * 6))
    log.create_snapshot(OffsetAndEpoch(3, 1), b"mine")
    log.install_snapshot(OffsetAndEpoch(40, 5), b"leader's")
    names = sorted(p.name for p in log.dir.glob("*.checkpoint"))
    assert names == ["00000000000000000040-0000000005.checkpoint"]
    assert sorted(p.name for p in log.dir.glob("*.log")) == ["00000000000000000040.log"]
