"""The in-memory RaftLog twin behaves like the real log where the core relies on it: KIP-101
lookups, truncation, snapshots, and a crash that keeps exactly the flushed entries."""

from kraft.raft import Entry, EpochEndOffset, MemoryRaftLog, OffsetAndEpoch


def _log(epochs: list[int]) -> MemoryRaftLog:
    log = MemoryRaftLog()
    log.append([Entry(i, e, b"%d" % i) for i, e in enumerate(epochs)])
    return log


def test_end_offset_for_epoch_answers_like_the_leader_epoch_cache():
    log = _log([1, 1, 3, 3, 3, 5])
    assert log.end_offset_for_epoch(1) == EpochEndOffset(1, 2)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(1, 2)
    assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 5)
    assert log.end_offset_for_epoch(5) == EpochEndOffset(5, 6)
    assert log.end_offset_for_epoch(9) == EpochEndOffset(5, 6)
    assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 0)


def test_a_crash_keeps_only_flushed_entries_and_truncation_is_durable():
    log = _log([1, 1, 1])
    log.flush()
    log.append([Entry(3, 2, b"3"), Entry(4, 2, b"4")])
    log.crash()
    assert log.log_end_offset == 3 and log.last_fetched_epoch == 1
    log.truncate_to(1)
    log.crash()
    assert log.log_end_offset == 1 and log.flushed_offset == 1


def test_a_snapshot_moves_the_log_start_and_answers_for_older_epochs():
    log = _log([1, 1, 2, 2, 3])
    log.create_snapshot(OffsetAndEpoch(3, 2), b"image")
    assert log.log_start_offset == 3 and log.read(3, 10)[0].offset == 3
    assert log.epoch_at(2) == 2 and log.read_snapshot(OffsetAndEpoch(3, 2)) == b"image"
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 4)
    assert log.end_offset_for_epoch(1).epoch == -1  # hidden by the snapshot: send it instead
    log.install_snapshot(OffsetAndEpoch(10, 4), b"newer")
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch) == (10, 10, 4)
    log.crash()
    assert log.latest_snapshot_id == OffsetAndEpoch(10, 4) and log.log_end_offset == 10
