"""The narrow log seam PartitionState talks to (ReplicaLog) and its in-memory twin, which keeps
only flushed records across `crash()`, so simulations and tests exercise real data loss."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from kraft.log.leader_epoch_cache import LeaderEpochCache
from kraft.raft.log import EpochEndOffset


class AppendedRange(NamedTuple):
    """Shaped like kraft.log.log.AppendInfo's first two fields, which is all the core reads."""

    first_offset: int
    last_offset: int


class ReplicaLog(Protocol):
    """What the core needs from a partition's log. `kraft.log.log.Log` has all of it but
    `latest_epoch` (its `leader_epoch_cache.latest_epoch`) and `assign_epoch_start` (its
    `leader_epoch_cache.assign`): a broker wraps it in a few lines. `records` are opaque."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch in the epoch cache, -1 for none (Kafka's lastFetchedEpoch)."""

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """KIP-101: (largest epoch <= `epoch`, where it ends); (-1, -1) if unknown."""

    def assign_epoch_start(self, epoch: int, start_offset: int) -> None:
        """A new leader records its epoch before any append, so followers holding a tail from a
        newer-than-our-last epoch learn where to cut (Kafka's maybeAssignEpochStartOffset)."""

    def append_as_leader(
        self, records: Any, leader_epoch: int, now_ms: int, *, from_coordinator: bool = False
    ) -> Any:
        """Assigns offsets; returns something with `first_offset` and `last_offset`.
        `from_coordinator`: the broker's own control batches (transaction markers)."""

    def append_as_follower(self, records: Any, *, now_ms: int | None = None) -> Any:
        """Offsets and epochs come from the leader; they continue the log end offset."""

    high_watermark: int
    """Where the partition's high watermark lives (the core reads and moves it here)."""

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every record and epoch, and start the log empty at `offset`: a follower whose
        log ends below the leader's log start (Kafka's truncateFullyAndStartAt)."""

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after `offset`, and every epoch-cache entry starting there
        even when no record goes (a leader's epoch assigned with nothing appended), so the next
        fetch names the epoch of the last record held. Kafka's Log.truncate_to returns early at
        the log end: the wrapper also calls `leader_epoch_cache.truncate_from_end(offset)`."""


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    leader_epoch: int
    payload: bytes


class MemoryReplicaLog:
    """A list of records and a memory-only LeaderEpochCache. Appends sit in the "page cache"
    until `flush()`; truncations and epoch assignments are durable at once (a file truncate and
    the leader-epoch-checkpoint write are)."""

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._epochs = LeaderEpochCache(None)
        self._start = 0  # log start offset: _records[0] holds this offset
        self.flushed_offset = 0
        self.high_watermark = 0
        # Bumped on every truncation or crash, so checkers can re-verify only what may have moved.
        self.generation = 0

    # -- reads ------------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._start + len(self._records)

    @property
    def latest_epoch(self) -> int:
        return self._epochs.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        return EpochEndOffset(*self._epochs.end_offset_for(epoch, self.log_end_offset))

    def read(self, offset: int, max_records: int) -> tuple[Record, ...]:
        i = max(offset - self._start, 0)
        return tuple(self._records[i : i + max_records])

    def record_at(self, offset: int) -> Record | None:
        i = offset - self._start
        return self._records[i] if 0 <= i < len(self._records) else None

    def records(self) -> list[Record]:
        return list(self._records)

    # -- writes -----------------------------------------------------------------------------------
    def assign_epoch_start(self, epoch: int, start_offset: int) -> None:
        if epoch > self._epochs.latest_epoch:
            self._epochs.assign(epoch, start_offset)

    def append_as_leader(
        self,
        payloads: Sequence[bytes],
        leader_epoch: int,
        now_ms: int,
        *,
        from_coordinator: bool = False,
    ) -> AppendedRange:
        first = self.log_end_offset
        if leader_epoch < self._epochs.latest_epoch:
            raise ValueError(
                f"leader epoch {leader_epoch} is older than the log's {self._epochs.latest_epoch}"
            )
        self.assign_epoch_start(leader_epoch, first)
        self._records.extend(
            Record(first + i, leader_epoch, bytes(p)) for i, p in enumerate(payloads)
        )
        return AppendedRange(first, self.log_end_offset - 1)

    def append_as_follower(
        self, records: Sequence[Record], *, now_ms: int | None = None
    ) -> AppendedRange:
        first = self.log_end_offset
        expected = first
        for r in records:  # validate all before changing anything, as the real log does
            if r.offset != expected:
                raise ValueError(
                    f"record at offset {r.offset} does not continue the log at "
                    f"{expected}; truncate or fetch from {expected}"
                )
            expected += 1
        for r in records:
            if r.leader_epoch > self._epochs.latest_epoch:
                self._epochs.assign(r.leader_epoch, r.offset)
            self._records.append(r)
        return AppendedRange(first, self.log_end_offset - 1)

    def truncate_to(self, offset: int) -> None:
        offset = max(offset, self._start)
        self._epochs.truncate_from_end(offset)
        if offset >= self.log_end_offset:
            return
        del self._records[offset - self._start :]
        self.flushed_offset = min(self.flushed_offset, offset)
        self.generation += 1

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._records = []
        self._epochs.clear()
        self._start = self.flushed_offset = self.high_watermark = offset
        self.generation += 1

    def delete_records_before(self, offset: int) -> None:
        """Retention (or DeleteRecords) on this replica: the log now starts at `offset`."""
        offset = min(max(offset, self._start), self.log_end_offset)
        del self._records[: offset - self._start]
        self._start = offset
        self._epochs.truncate_from_start(offset)

    def flush(self) -> None:
        self.flushed_offset = self.log_end_offset

    def crash(self) -> None:
        """Lose what a real disk would: every record appended since the last flush. Epoch-cache
        entries past the surviving end go too, as Log.open's recovery drops them."""
        self.truncate_to(self.flushed_offset)
        self.generation += 1
