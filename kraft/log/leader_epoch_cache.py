"""The leader epoch cache (KIP-101): which leader epoch began at which offset, persisted to
`leader-epoch-checkpoint` on every change; answers OffsetsForLeaderEpoch for truncation."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import NamedTuple

from kraft.log.checkpoint import read_epoch_checkpoint, write_epoch_checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Entries have strictly increasing epochs and start offsets. `path=None` keeps it in memory."""

    def __init__(self, path: Path | None, entries: list[tuple[int, int]] = ()) -> None:
        self.path = path
        self._entries = [EpochEntry(*e) for e in entries]

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        """Raises CheckpointError on a malformed file; a missing file is an empty cache."""
        return cls(path, read_epoch_checkpoint(path) or [])

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def _epochs(self) -> list[int]:
        return [e.epoch for e in self._entries]

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`; entries it contradicts (an epoch or start
        offset not below the new one) are dropped first, as Kafka does. True if changed.
        `flush=False` defers the file write to `flush()` (recovery assigns many at once)."""
        if epoch < 0:
            return False
        if self._entries:
            latest = self._entries[-1]
            if latest.epoch == epoch and start_offset >= latest.start_offset:
                return False
        self._entries = [
            e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset
        ]
        self._entries.append(EpochEntry(epoch, start_offset))
        if flush:
            self._persist()
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """KIP-101: (largest known epoch <= `epoch`, the offset where the next epoch starts, or the
        log end offset for the latest epoch); (-1, -1) when unknown."""
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self.latest_epoch:
            return epoch, log_end_offset
        epochs = self._epochs()
        higher = bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # Older than anything we kept: the data is gone; let the follower start where we do.
            return epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range contains `offset`, or -1 if before the first entry."""
        starts = [e.start_offset for e in self._entries]
        i = bisect_right(starts, offset)
        return self._entries[i - 1].epoch if i else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        starts = [e.start_offset for e in self._entries]
        keep = bisect_left(starts, end_offset)
        if keep < len(self._entries):
            del self._entries[keep:]
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop entries wholly before it and move the one
        containing it to start there."""
        starts = [e.start_offset for e in self._entries]
        i = bisect_right(starts, start_offset)
        if i == 0 or (i == 1 and self._entries[0].start_offset == start_offset):
            return
        kept = self._entries[i - 1]
        self._entries[:i] = [EpochEntry(kept.epoch, start_offset)]
        self._persist()

    def clear(self) -> None:
        if self._entries:
            self._entries = []
            self._persist()

    def flush(self) -> None:
        self._persist()

    def _persist(self) -> None:
        # Inline, on the loop, as Kafka does under the log's lock: a change happens once per
        # leader epoch or truncation, and a write in a thread could land after a later change
        # to the file (a truncation right after a new epoch) and undo it.
        if self.path is not None:
            write_epoch_checkpoint(self.path, self._entries)
