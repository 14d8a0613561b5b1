"""The narrow storage seams the Raft core talks to: the replicated log (entries, epochs, snapshots)
and the election-state store (`quorum-state`). memory.py holds in-memory twins of both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

# Kafka's sentinels: an empty log has last fetched epoch 0; -1 means "unknown".
NO_EPOCH = 0
UNKNOWN_EPOCH = -1
UNKNOWN_OFFSET = -1


class OffsetAndEpoch(NamedTuple):
    """A position in the log: `offset` is an end offset (exclusive) for snapshot ids."""

    offset: int
    epoch: int


class EpochEndOffset(NamedTuple):
    """KIP-101's answer, same shape as `kraft.log.Log.end_offset_for_epoch`: the largest epoch
    <= the one asked for, and the offset where it ends (the next epoch's start or the log end)."""

    epoch: int
    end_offset: int


UNKNOWN_EPOCH_END = EpochEndOffset(UNKNOWN_EPOCH, UNKNOWN_OFFSET)


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of the metadata log. `control` marks Raft's own records (LeaderChange), which a
    state machine skips; the on-disk adapter maps it to the batch's control bit."""

    offset: int
    epoch: int
    payload: bytes
    control: bool = False


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What `quorum-state` holds: a voter must never forget its vote or the leader of an epoch."""

    epoch: int = 0
    voted_for: int | None = None
    leader_id: int | None = None


class RaftLog(Protocol):
    """The replicated log. Appends and truncations go to the page cache at once; `flush()` makes
    them durable (a crash keeps exactly the entries below `flushed_offset`). Snapshot writes and
    installs are durable when they return (tmp, fsync, rename)."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def flushed_offset(self) -> int: ...
    @property
    def last_fetched_epoch(self) -> int:
        """Epoch of the last entry, else of the latest snapshot, else NO_EPOCH."""

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None: ...

    def epoch_at(self, offset: int) -> int:
        """Epoch of the entry at `offset` (the snapshot's epoch for log_start_offset - 1)."""

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """KIP-101 lookup; UNKNOWN_EPOCH_END when `epoch` is older than anything kept."""

    def append(self, entries: Sequence[Entry]) -> None:
        """Entries start at log_end_offset, with non-decreasing epochs."""

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at or after `offset`."""

    def read(self, offset: int, max_entries: int) -> list[Entry]: ...
    def flush(self) -> None: ...

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Store a snapshot of the state below `snapshot_id.offset`; entries below it may go."""

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes | None: ...
    def read_snapshot_chunk(
        self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
    ) -> tuple[int, bytes] | None:
        """(size, bytes [position, position + max_bytes)) reading only those; None when the
        snapshot is gone or `position` is past its end."""

    def install_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Replace the whole log with a snapshot fetched from the leader."""


class ElectionStore(Protocol):
    """`quorum-state`: written crash-safely (tmp, fsync, rename, fsync dir) before any message
    that depends on it is sent."""

    def read(self) -> ElectionState | None: ...
    def write(self, state: ElectionState) -> None: ...
