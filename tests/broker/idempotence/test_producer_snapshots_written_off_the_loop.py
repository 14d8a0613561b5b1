"""Producer state snapshots are taken on the loop and written in a thread: one taken before a
truncation never lands after it, and one taken before its partition was deleted never lands in
the partition dir created since under the same name."""

from __future__ import annotations

import threading

import trio
from idempotence_helpers import batch, host, leader


def _snapshots(replicas):
    return sorted(p.name for p in replicas.get("t", 0).log.dir.glob("*.snapshot"))


async def test_the_write_runs_in_a_thread_and_is_recorded_on_the_loop(tmp_path, monkeypatch):
    replicas = leader(tmp_path)
    replicas.append("t", 0, batch(0), 1, 0)
    threads = []
    real = replicas.write_producer_snapshots
    monkeypatch.setattr(
        replicas,
        "write_producer_snapshots",
        lambda due: (threads.append(threading.current_thread()), real(due))[1],
    )
    due = replicas.due_producer_snapshots()
    replicas.producer_snapshots_written(
        await trio.to_thread.run_sync(replicas.write_producer_snapshots, due)
    )
    assert threads and threads[0] is not threading.current_thread()
    assert _snapshots(replicas) == ["00000000000000000002.snapshot"]
    assert replicas.producer_state("t", 0).snapshot_offset == 2
    assert replicas.due_producer_snapshots() == []  # nothing new to write


def test_a_snapshot_taken_before_a_truncation_is_not_written_after_it(tmp_path):
    replicas = leader(tmp_path)
    replicas.append("t", 0, batch(0), 1, 0)
    replicas.append("t", 0, batch(2), 1, 0)
    due = replicas.due_producer_snapshots()  # as of offset 4
    log = replicas.get("t", 0).log
    log.truncate_to(2)
    replicas.on_log_truncated("t", 0)
    replicas.append("t", 0, batch(2, n=3), 1, 0)  # offsets 2..4: other batches
    assert replicas.write_producer_snapshots(due) == []
    assert _snapshots(replicas) == []
    # The next checkpoint writes what the log holds now.
    replicas.checkpoint_producer_states()
    assert _snapshots(replicas) == ["00000000000000000005.snapshot"]


def test_a_snapshot_of_a_deleted_partition_stays_out_of_its_successor(tmp_path):
    replicas = leader(tmp_path)
    replicas.append("t", 0, batch(0), 1, 0)
    due = replicas.due_producer_snapshots()
    replicas.remove_partition("t", 0)
    host(replicas, leader=1, leader_epoch=2)  # recreated: same dir name
    done = replicas.write_producer_snapshots(due)
    # The old dir is gone (renamed, then removed): the write fails there, quietly, since its
    # partition is no longer hosted.
    assert [type(error) for *_, error in done] == [FileNotFoundError]
    replicas.producer_snapshots_written(done)
    assert _snapshots(replicas) == []
    assert replicas.producer_state("t", 0).snapshot_offset == -1
