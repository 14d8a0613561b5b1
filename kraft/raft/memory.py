"""In-memory twins of RaftLog and ElectionStore, shipped so tests and simulations share them;
`crash()` keeps only what a real disk would have kept (flushed entries, snapshots, quorum-state)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kraft.raft.log import (
    NO_EPOCH,
    UNKNOWN_EPOCH_END,
    ElectionState,
    Entry,
    EpochEndOffset,
    OffsetAndEpoch,
)


class MemoryRaftLog:
    # Enough old snapshots for a follower that is half-way through fetching one.
    SNAPSHOTS_KEPT = 2

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._start = 0
        self._flushed = 0
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        self._snapshot_id: OffsetAndEpoch | None = None
        # (epoch, start offset) for every epoch present in _entries, for KIP-101 lookups.
        self._epoch_starts: list[tuple[int, int]] = []

    # -- reads ------------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._start + len(self._entries)

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        if self._entries:
            return self._entries[-1].epoch
        return self._snapshot_id.epoch if self._snapshot_id else NO_EPOCH

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshot_id

    def epoch_at(self, offset: int) -> int:
        if self._start <= offset < self.log_end_offset:
            return self._entries[offset - self._start].epoch
        if offset == self._start - 1 and self._snapshot_id is not None:
            return self._snapshot_id.epoch
        if offset == -1:
            return NO_EPOCH
        raise IndexError(
            f"offset {offset} is outside the log [{self._start}, {self.log_end_offset})"
        )

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        last = self.last_fetched_epoch
        if epoch >= last:
            return EpochEndOffset(last, self.log_end_offset)
        i = bisect_right(self._epoch_starts, (epoch, float("inf")))
        if i == 0:
            # Older than every entry: only the snapshot (if as old) can answer.
            snap = self._snapshot_id
            if snap is not None and snap.epoch <= epoch:
                return EpochEndOffset(snap.epoch, self._start)
            if snap is None and epoch >= NO_EPOCH and self._start == 0:
                return EpochEndOffset(NO_EPOCH, 0)
            return UNKNOWN_EPOCH_END
        return EpochEndOffset(self._epoch_starts[i - 1][0], self._epoch_starts[i][1])

    def read(self, offset: int, max_entries: int) -> list[Entry]:
        if offset < self._start:
            raise IndexError(f"offset {offset} is below the log start {self._start}")
        i = offset - self._start
        return self._entries[i : i + max_entries]

    def entries(self) -> list[Entry]:
        return list(self._entries)

    # -- writes -----------------------------------------------------------------------------------
    def append(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            if e.offset != self.log_end_offset:
                raise ValueError(f"append at {e.offset}, log end is {self.log_end_offset}")
            if e.epoch < self.last_fetched_epoch:
                raise ValueError(f"epoch {e.epoch} after {self.last_fetched_epoch}")
            if not self._epoch_starts or self._epoch_starts[-1][0] != e.epoch:
                self._epoch_starts.append((e.epoch, e.offset))
            self._entries.append(e)

    def truncate_to(self, offset: int) -> None:
        if offset < self._start:
            raise ValueError(f"truncate to {offset} below the log start {self._start}")
        if offset >= self.log_end_offset:
            return
        del self._entries[offset - self._start :]
        while self._epoch_starts and self._epoch_starts[-1][1] >= offset:
            self._epoch_starts.pop()
        # Truncation is durable at once, as a file truncate plus the epoch checkpoint are.
        self._flushed = min(self._flushed, offset)

    def flush(self) -> None:
        self._flushed = self.log_end_offset

    def crash(self) -> None:
        """Lose every entry a real disk would not have: those appended since the last flush."""
        self.truncate_to(max(self._flushed, self._start))

    # -- snapshots --------------------------------------------------------------------------------
    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        if snapshot_id.offset < self._start:
            return  # a snapshot was installed meanwhile: this older one is of no use
        if not self._start <= snapshot_id.offset <= self.log_end_offset:
            raise ValueError(
                f"snapshot {snapshot_id} outside [{self._start}, {self.log_end_offset}]"
            )
        if snapshot_id.epoch != self.epoch_at(snapshot_id.offset - 1):
            raise ValueError(f"snapshot {snapshot_id} epoch differs from the log's")
        self._keep_snapshot(snapshot_id, data)
        del self._entries[: snapshot_id.offset - self._start]
        self._start = snapshot_id.offset
        first = self._entries[0].epoch if self._entries else None
        self._epoch_starts = [
            (e, max(s, self._start))
            for e, s in self._epoch_starts
            if first is not None and e >= first
        ]
        self._flushed = max(self._flushed, self._start)

    def install_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        self._keep_snapshot(snapshot_id, data)
        self._entries = []
        self._epoch_starts = []
        self._start = snapshot_id.offset
        self._flushed = snapshot_id.offset

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes | None:
        return self._snapshots.get(snapshot_id)

    def read_snapshot_chunk(
        self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
    ) -> tuple[int, bytes] | None:
        data = self._snapshots.get(snapshot_id)
        if data is None or position > len(data):
            return None
        return len(data), data[position : position + max_bytes]

    def _keep_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        self._snapshots[snapshot_id] = bytes(data)
        if self._snapshot_id is None or snapshot_id.offset >= self._snapshot_id.offset:
            self._snapshot_id = snapshot_id
        for old in sorted(self._snapshots, key=lambda s: s.offset)[: -self.SNAPSHOTS_KEPT]:
            del self._snapshots[old]


class MemoryElectionStore:
    """Writes are atomic and durable, like the tmp-fsync-rename `quorum-state` file."""

    def __init__(self, state: ElectionState | None = None) -> None:
        self._state = state
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self._state

    def write(self, state: ElectionState) -> None:
        self._state = state
        self.writes += 1
