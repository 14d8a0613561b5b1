"""MemoryReplicaLog keeps the promises of the ReplicaLog seam: a crash keeps only flushed records
(and the epochs they need), truncation drops empty epochs, a bad follower append changes nothing."""

import pytest

from broker.replication import EpochEndOffset, MemoryReplicaLog, Record


def test_a_crash_keeps_only_flushed_records_and_their_epochs():
    log = MemoryReplicaLog()
    log.append_as_leader([b"a", b"b"], 1, now_ms=0)
    log.flush()
    log.append_as_leader([b"c"], 2, now_ms=0)
    log.crash()
    assert [r.payload for r in log.records()] == [b"a", b"b"]
    assert log.latest_epoch == 1
    assert log.end_offset_for_epoch(1) == EpochEndOffset(1, 2)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(-1, -1)  # newer than any held: unknown


def test_truncation_is_durable_and_drops_an_epoch_with_no_records():
    log = MemoryReplicaLog()
    log.append_as_leader([b"a", b"b"], 1, now_ms=0)
    log.flush()
    log.assign_epoch_start(3, 2)
    assert log.latest_epoch == 3
    log.truncate_to(2)
    assert log.latest_epoch == 1
    log.truncate_to(1)
    log.append_as_leader([b"x"], 2, now_ms=0)  # unflushed
    log.crash()
    assert [r.payload for r in log.records()] == [b"a"] and log.flushed_offset == 1


def test_a_follower_append_that_does_not_continue_the_log_changes_nothing():
    log = MemoryReplicaLog()
    log.append_as_follower([Record(0, 1, b"a")])
    with pytest.raises(ValueError, match="offset 3 does not continue the log at 2"):
        log.append_as_follower([Record(1, 2, b"b"), Record(3, 2, b"d")])
    assert log.records() == [Record(0, 1, b"a")] and log.latest_epoch == 1
