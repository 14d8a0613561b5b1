"""Ready (what a driver must do, in order) and LeaderAndEpoch (who leads): the values the core
hands out besides QuorumInfo (clients/quorum_info.py, what `kraft quorum describe` prints)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kraft.raft.log import ElectionState, Entry, OffsetAndEpoch
from kraft.raft.messages import Message


class SnapshotInstall(NamedTuple):
    """A snapshot fetched whole from the leader, for the driver to install in the log (it
    replaces every entry): durable before anything else of its Ready happens."""

    snapshot_id: OffsetAndEpoch
    data: bytes


class LeaderAndEpoch(NamedTuple):
    """Who leads (None: unknown, an election may be running) in which epoch (Kafka's name)."""

    leader_id: int | None
    epoch: int


@dataclass(frozen=True)
class Ready:
    """Do these in order, then call `advance(ready)`:
    1. persist: `log.install_snapshot(*snapshot_to_install)` (if set); write `election_state`
       (if set) to the ElectionStore; `log.flush()` if `must_flush` (entries were already
       appended or truncated through the RaftLog);
    2. send `messages`;
    3. apply: load `snapshot_to_load` (from `log.read_snapshot`) into the state machine, then
       apply `committed` in order, then, if `snapshot_to_take` is set, serialise the state machine
       (now exactly at that offset) and call `log.create_snapshot(snapshot_to_take, data)`.
    Wake the core again by `next_deadline_ms` with `tick` (None: nothing timed is pending)."""

    snapshot_to_install: SnapshotInstall | None
    election_state: ElectionState | None
    must_flush: bool
    messages: tuple[Message, ...]
    snapshot_to_load: OffsetAndEpoch | None
    committed: tuple[Entry, ...]
    snapshot_to_take: OffsetAndEpoch | None
    # Soft state, for the driver to route clients: not persisted.
    role: str
    epoch: int
    leader_id: int | None
    high_watermark: int
    next_deadline_ms: int | None
