"""The producer state (idempotent and transactional producers) of each partition this node
hosts, kept caught up with its log, and its snapshot files: taken on the loop, written in a
thread, dropped when the log is truncated under them. ReplicaManager owns one and checks every
produce against it."""

from __future__ import annotations

import logging
import os
import threading

from broker.idempotence import producer_state_file
from broker.idempotence.producer_state import ProducerStateManager
from kraft.log.log import Log

log = logging.getLogger(__name__)


class HostedProducerStates:
    """`hosted` is the ReplicaManager's own (topic, partition) -> Partition map, read here, so a
    state is never used for a log the partition no longer has."""

    def __init__(self, hosted: dict) -> None:
        self._hosted = hosted
        # (the log it describes, its state) per hosted partition
        self._states: dict[tuple[str, int], tuple[Log, ProducerStateManager]] = {}
        # Snapshot files: writes run in a thread, truncations' deletions on the loop; the count
        # of truncations per partition tells a write taken before one that it is stale.
        self._snapshot_lock = threading.Lock()
        self._truncations: dict[tuple[str, int], int] = {}

    def of(self, tp: tuple[str, int], log_: Log) -> ProducerStateManager:
        """The state describing all of `log_` (the partition's log): loaded (snapshot, then the
        log after it) on first use or when the log was replaced, else caught up with the log."""
        known = self._states.get(tp)
        if known is None or known[0] is not log_:
            state = producer_state_file.load_producer_state(log_)
            self._states[tp] = (log_, state)
            return state
        producer_state_file.catch_up(known[1], log_)
        return known[1]

    def current(self, tp: tuple[str, int]) -> ProducerStateManager:
        """The state as it stands (an append just checked against it caught it up)."""
        return self._states[tp][1]

    def loaded(self) -> list[ProducerStateManager]:
        """The states loaded so far (a partition not yet produced to or read may have none)."""
        return [state for _, state in self._states.values()]

    def forget(self, tp: tuple[str, int]) -> None:
        self._states.pop(tp, None)

    def on_log_truncated(self, tp: tuple[str, int]) -> None:
        """The log lost its tail (KIP-101 truncation): snapshots past the new end are deleted
        and the state reloaded, since replaying forward cannot undo batches."""
        # Waits for a snapshot write of this node in a thread (one file at most), so that none
        # taken before the truncation lands after these deletions: the next write sees the count.
        with self._snapshot_lock:
            self._truncations[tp] = self._truncations.get(tp, 0) + 1
            known = self._states.get(tp)
            if known is not None:
                producer_state_file.reload(known[1], known[0])

    def due_snapshots(self) -> list[tuple]:
        """The periodic checkpoint's snapshots, taken on the loop (states caught up with their
        logs) for write_snapshots to write in a thread."""
        due = []
        for tp, (log_, state) in list(self._states.items()):
            hosted = self._hosted.get(tp)
            if hosted is None or hosted.log is not log_:
                continue
            try:
                producer_state_file.catch_up(state, log_)
                if state.end_offset != state.snapshot_offset:
                    due.append(
                        (
                            tp,
                            state,
                            self._truncations.get(tp),
                            producer_state_file.take_snapshot(log_.dir, state),
                            log_,
                        )
                    )
            except OSError:
                log.exception("producer state snapshot of %s-%d failed", *tp)
        return due

    def write_snapshots(self, due: list[tuple]) -> list[tuple]:
        """Any thread: write each snapshot unless its log was truncated since it was taken.
        Returns (tp, state, offset, error or None) of each one written or failed."""
        done = []
        for tp, state, truncations, pending, log_ in due:
            with self._snapshot_lock:
                if self._truncations.get(tp) != truncations:
                    os.close(pending.dir_fd)  # stale: describes batches since cut
                    continue
                try:
                    # The .txnindex entries the snapshot's offset covers must outlive a crash:
                    # a restart replays only the log after it.
                    log_.fsync_txn_indexes()
                    producer_state_file.write_pending_snapshot(pending)
                    done.append((tp, state, pending.offset, None))
                except OSError as exc:
                    done.append((tp, state, pending.offset, exc))
        return done

    def snapshots_written(self, done: list[tuple]) -> None:
        """On the loop: what write_snapshots did."""
        for tp, state, offset, exc in done:
            if exc is None:
                state.snapshot_offset = offset
            elif self._states.get(tp, (None, None))[1] is state:
                # (A partition deleted meanwhile took its dir, and the write, with it.)
                log.error("producer state snapshot of %s-%d failed: %s", *tp, exc)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` on every hosted partition (Kafka's
        producer.id.expiration.ms); returns how many."""
        removed = 0
        for tp, (log_, state) in list(self._states.items()):
            hosted = self._hosted.get(tp)
            if hosted is not None and hosted.log is log_:
                removed += len(state.remove_expired_producers(now_ms, expiration_ms))
        if removed:
            log.debug(
                "expired %d idle producer id(s) (producer.id.expiration.ms=%d)",
                removed,
                expiration_ms,
            )
        return removed
