"""A broker's periodic log jobs (retention, flushes, compaction, checkpoints, producer
snapshots): each a loop the node starts in its nursery, fsyncing in a thread."""

from __future__ import annotations

from collections.abc import Callable

import trio

from broker.replication.replica_manager import ReplicaManager
from kraft.log.log_manager import LogManager, fsync_all, write_checkpoints


async def run_every(
    interval_ms: int, job: Callable[[int], object], clock_ms: Callable[[], int]
) -> None:
    while True:
        await trio.sleep(interval_ms / 1000)
        job(clock_ms())


async def flush_every(
    interval_ms: int, log_manager: LogManager, clock_ms: Callable[[], int]
) -> None:
    """flush.ms and rolled segments: what is owed is decided on the loop, fsynced in a thread
    (Kafka's background flusher), and the recovery points move on the loop once it is done."""
    while True:
        await trio.sleep(interval_ms / 1000)
        pending = log_manager.due_flushes(clock_ms())
        if pending:
            # A failed fsync takes its log dir offline (on this loop, in flushes_done).
            log_manager.flushes_done(await trio.to_thread.run_sync(fsync_all, pending))


async def clean_every(
    interval_ms: int, log_manager: LogManager, clock_ms: Callable[[], int]
) -> None:
    """Compaction: reading segments and writing the cleaned ones run in a thread while appends go
    on; each swap into a log's segment list runs on this loop, where appends and retention run."""
    while True:
        await trio.sleep(interval_ms / 1000)
        await log_manager.clean_compacted_off_loop(clock_ms(), trio.to_thread.run_sync)


async def checkpoint_every(interval_ms: int, log_manager: LogManager) -> None:
    """The offsets are read on the loop that moves them; the fsyncing writes run in a thread."""
    while True:
        await trio.sleep(interval_ms / 1000)
        failed = await trio.to_thread.run_sync(write_checkpoints, log_manager.checkpoint_offsets())
        log_manager.checkpoints_failed(failed)  # those dirs go offline, on this loop


async def snapshot_producers_every(interval_ms: int, replicas: ReplicaManager) -> None:
    """Producer state snapshots: taken on the loop, written (tmp, fsync, rename) in a thread."""
    while True:
        await trio.sleep(interval_ms / 1000)
        due = replicas.due_producer_snapshots()
        if due:
            replicas.producer_snapshots_written(
                await trio.to_thread.run_sync(replicas.write_producer_snapshots, due)
            )
