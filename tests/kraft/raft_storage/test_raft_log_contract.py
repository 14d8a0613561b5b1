"""The RaftLog contract, run on the in-memory twin and on FileRaftLog alike: appends and reads,
epochs and KIP-101 lookups, truncation, flush and crash, snapshots and the log start offset."""

import pytest
from raft_storage_harness import entries

from kraft.raft.log import NO_EPOCH, UNKNOWN_EPOCH_END, Entry, EpochEndOffset, OffsetAndEpoch


def test_an_empty_log_is_at_offset_zero_with_no_epoch(harness):
    log = harness.open()
    assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (0, 0, 0)
    assert log.last_fetched_epoch == NO_EPOCH
    assert log.latest_snapshot_id is None
    assert log.epoch_at(-1) == NO_EPOCH
    assert log.end_offset_for_epoch(0) == EpochEndOffset(NO_EPOCH, 0)
    assert log.read(0, 10) == []


def test_appended_entries_read_back_exactly(harness):
    log = harness.open()
    written = [
        Entry(0, 1, b"a"),
        Entry(1, 1, b""),
        Entry(2, 1, b"x" * 300, control=True),
        Entry(3, 2, b"d"),
    ]
    log.append(written)
    assert log.log_end_offset == 4
    assert log.read(0, 100) == written
    assert log.read(1, 2) == written[1:3]
    assert log.read(3, 0) == []
    assert log.read(4, 10) == []


def test_reads_cross_many_appends(harness):
    log = harness.open()
    for i in range(30):
        log.append(entries(i, [1 + i // 10]))
    got = log.read(0, 1000)
    assert [e.offset for e in got] == list(range(30))
    assert [e.epoch for e in got] == [1 + i // 10 for i in range(30)]
    assert log.read(7, 11) == got[7:18]


def test_append_refuses_a_gap_or_an_epoch_going_back(harness):
    log = harness.open()
    log.append(entries(0, [2, 2]))
    with pytest.raises(ValueError):
        log.append(entries(3, [2]))
    with pytest.raises(ValueError):
        log.append(entries(2, [1]))
    assert log.log_end_offset == 2
    assert log.read(0, 10) == entries(0, [2, 2])


def test_epoch_at_and_last_fetched_epoch_follow_the_entries(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 2, 2, 2, 4, 4]))
    assert [log.epoch_at(o) for o in range(7)] == [1, 1, 2, 2, 2, 4, 4]
    assert log.last_fetched_epoch == 4
    with pytest.raises(IndexError):
        log.epoch_at(7)


@pytest.mark.parametrize(
    "asked, answer",
    [
        (0, (NO_EPOCH, 0)),  # older than every entry of a log that starts at 0
        (1, (1, 2)),  # epoch 1 ends where epoch 2 starts
        (2, (2, 5)),
        (3, (2, 5)),  # KIP-101: the largest epoch <= 3 is 2
        (4, (4, 7)),  # the latest epoch ends at the log end
        (9, (4, 7)),
    ],
)
def test_end_offset_for_epoch_answers_as_kip101(harness, asked, answer):
    log = harness.open()
    log.append(entries(0, [1, 1, 2, 2, 2, 4, 4]))
    assert log.end_offset_for_epoch(asked) == EpochEndOffset(*answer)


def test_truncate_to_drops_the_tail_and_its_epochs(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 2, 2, 3, 3]))
    log.truncate_to(3)
    assert log.log_end_offset == 3
    assert log.read(0, 10) == entries(0, [1, 1, 2])
    assert log.last_fetched_epoch == 2
    assert log.end_offset_for_epoch(3) == EpochEndOffset(2, 3)
    log.truncate_to(10)  # past the end: nothing to do
    assert log.log_end_offset == 3
    log.append([Entry(3, 5, b"new")])
    assert log.read(3, 1) == [Entry(3, 5, b"new")]
    assert log.end_offset_for_epoch(4) == EpochEndOffset(2, 3)


def test_flush_moves_flushed_offset_to_the_log_end(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 1]))
    assert log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 3
    log.append(entries(3, [1, 1]))
    assert log.flushed_offset == 3
    log.truncate_to(2)
    assert log.flushed_offset == 2


def test_a_crash_keeps_exactly_the_flushed_entries(harness):
    log = harness.open()
    log.append(entries(0, [1] * 8))
    log.flush()
    log.append(entries(8, [2] * 9))  # several segments' worth on disk, never fsynced
    log = harness.crash(log)
    assert log.log_end_offset == 8
    assert log.read(0, 100) == entries(0, [1] * 8)
    assert log.last_fetched_epoch == 1
    assert log.flushed_offset == 8


def test_a_crash_after_truncation_does_not_bring_the_old_tail_back(harness):
    log = harness.open()
    log.append(entries(0, [1] * 6))
    log.flush()
    log.truncate_to(3)
    log.append(entries(3, [2]))  # not flushed: lost, and so is the old tail it replaced
    log = harness.crash(log)
    assert log.read(0, 100) == entries(0, [1] * 3)


def test_create_snapshot_moves_the_log_start(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 1, 2, 2, 2, 3, 3, 3, 3]))
    snap = OffsetAndEpoch(6, 2)
    log.create_snapshot(snap, b"state@6")
    assert log.latest_snapshot_id == snap
    assert log.read_snapshot(snap) == b"state@6"
    assert log.read_snapshot(OffsetAndEpoch(5, 2)) is None
    assert (log.log_start_offset, log.log_end_offset) == (6, 10)
    assert log.flushed_offset >= 6
    assert log.read(6, 100) == entries(6, [3, 3, 3, 3])
    with pytest.raises(IndexError):
        log.read(5, 1)
    assert log.epoch_at(5) == 2  # the snapshot's epoch, just below the log start
    with pytest.raises(IndexError):
        log.epoch_at(4)
    assert log.end_offset_for_epoch(1) == UNKNOWN_EPOCH_END  # older than the snapshot
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 6)
    assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 10)
    with pytest.raises(ValueError):
        log.truncate_to(5)
    log.truncate_to(6)  # every entry goes; the snapshot stays
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch) == (6, 6, 2)
    assert log.read(6, 10) == [] and log.epoch_at(5) == 2
    log.append(entries(6, [2]))
    assert log.read(6, 10) == entries(6, [2])


def test_create_snapshot_checks_offset_and_epoch(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 2]))
    with pytest.raises(ValueError):
        log.create_snapshot(OffsetAndEpoch(2, 2), b"wrong epoch")
    with pytest.raises(ValueError):
        log.create_snapshot(OffsetAndEpoch(4, 2), b"past the end")
    assert log.latest_snapshot_id is None and log.log_start_offset == 0


def test_a_snapshot_of_everything_leaves_its_epoch_as_last_fetched(harness):
    log = harness.open()
    log.append(entries(0, [1, 2, 2]))
    log.create_snapshot(OffsetAndEpoch(3, 2), b"all")
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    assert log.read(3, 10) == []
    assert log.last_fetched_epoch == 2
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 3)
    assert log.end_offset_for_epoch(1) == UNKNOWN_EPOCH_END
    with pytest.raises(ValueError):
        log.append(entries(3, [1]))
    log.append(entries(3, [2, 4]))
    assert log.read(3, 10) == entries(3, [2, 4])
    assert log.end_offset_for_epoch(3) == EpochEndOffset(2, 4)


def test_only_the_newest_two_snapshots_are_kept(harness):
    log = harness.open()
    log.append(entries(0, [1] * 9))
    for offset in (3, 6, 9):
        log.create_snapshot(OffsetAndEpoch(offset, 1), b"s%d" % offset)
    assert log.read_snapshot(OffsetAndEpoch(3, 1)) is None
    assert log.read_snapshot(OffsetAndEpoch(6, 1)) == b"s6"
    assert log.latest_snapshot_id == OffsetAndEpoch(9, 1)


def test_install_snapshot_replaces_the_whole_log(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 1, 1]))
    snap = OffsetAndEpoch(20, 7)
    log.install_snapshot(snap, b"leader state")
    assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (20, 20, 20)
    assert log.latest_snapshot_id == snap
    assert log.read_snapshot(snap) == b"leader state"
    assert log.last_fetched_epoch == 7
    assert log.epoch_at(19) == 7
    assert log.end_offset_for_epoch(7) == EpochEndOffset(7, 20)
    log.append(entries(20, [7, 8]))
    assert log.read(20, 10) == entries(20, [7, 8])
    log.create_snapshot(OffsetAndEpoch(3, 1), b"stale")  # older than the install: ignored
    assert log.latest_snapshot_id == snap and log.log_start_offset == 20


def test_snapshots_and_log_start_survive_a_crash(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 2, 2, 2, 2]))
    log.create_snapshot(OffsetAndEpoch(4, 2), b"state@4")
    log.append(entries(6, [3, 3]))  # lost in the crash
    log = harness.crash(log)
    assert log.latest_snapshot_id == OffsetAndEpoch(4, 2)
    assert log.read_snapshot(OffsetAndEpoch(4, 2)) == b"state@4"
    assert log.log_start_offset == 4
    assert log.log_end_offset >= 4 and log.flushed_offset >= 4
    assert log.epoch_at(3) == 2
    assert all(e.epoch == 2 for e in log.read(4, 100))


def test_an_installed_snapshot_survives_a_crash(harness):
    log = harness.open()
    log.append(entries(0, [1, 1, 1]))
    log.flush()
    log.install_snapshot(OffsetAndEpoch(10, 4), b"leader state")
    log = harness.crash(log)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)
    assert log.last_fetched_epoch == 4
    assert log.read_snapshot(OffsetAndEpoch(10, 4)) == b"leader state"
