"""This node's seat on the KRaft metadata log: a voter on controllers, an observer on broker-only
nodes. It owns the log, quorum-state, Raft core and driver, decodes each committed entry once and
hands the records, in log order, to every metadata listener (active controller, broker image)."""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import trio

from kraft.metadata import records as r
from kraft.metadata.image import MetadataImage
from kraft.metadata.snapshot import snapshot_from_bytes, snapshot_to_bytes
from kraft.raft import RaftConfig, RaftCore
from kraft.raft.disk import (
    FileElectionStore,
    FileRaftLog,
    metadata_log_dir,
    quorum_state_path,
    write_initial,
)
from kraft.raft.driver import RaftDriver, monotonic_ms
from kraft.raft.log import Entry, OffsetAndEpoch

log = logging.getLogger(__name__)

# One committed metadata record: (offset, epoch, record).
CommittedRecord = tuple[int, int, r.MetadataRecord]


class MetadataListener(Protocol):
    def replay_committed(self, records: Sequence[CommittedRecord]) -> None:
        """Committed records in log order, each exactly once (Raft control records included:
        they replay as no-ops and move the image's offset)."""

    def load_snapshot(self, image: MetadataImage) -> None:
        """Start over from a snapshot's image (a follower behind the leader's log start)."""


class ControllerListener(MetadataListener, Protocol):
    """The active controller: it proposes through the driver, and its image is the one snapshots
    are taken of on a controller."""

    def image(self) -> MetadataImage: ...


@dataclasses.dataclass(frozen=True)
class QuorumConfig:
    """What this node's seat needs of the node's config; server/node.py's quorum_config builds it
    from server.properties (as controller_config does for the controller)."""

    node_id: int
    voters: Mapping[int, str]  # voter node id -> "host:port"
    is_voter: bool  # a controller votes; a broker-only node observes
    log_dir: pathlib.Path  # metadata.log.dir: the metadata log and quorum-state
    raft: RaftConfig


class QuorumConfigError(ValueError):
    """controller.quorum.voters disagrees with the voters this node's quorum-state was formatted
    for; the message says how to mend it."""


def decode_entries(entries: Sequence[Entry]) -> list[CommittedRecord]:
    """Committed entries as records. An entry this version cannot read is logged and skipped:
    stopping would take the node down for good, and every node skips the same entry."""
    out = []
    for entry in entries:
        try:
            out.append((entry.offset, entry.epoch, r.decode(entry.payload)))
        except r.MetadataRecordError as exc:
            log.error("metadata log offset %d skipped: %s", entry.offset, exc)
    return out


class MetadataQuorum:
    """Open before the node serves; `run` runs the driver until cancelled; `close` releases the
    log files. Wired whole at construction: `controller` (made from the driver, on a node that
    runs the quorum) replays first, then `listeners`; snapshots are taken of the controller's
    image, else of `snapshot_source`."""

    def __init__(
        self,
        config: QuorumConfig,
        cluster_id: str = "",
        open_channel: Callable[[str], object] | None = None,
        *,
        listeners: Sequence[MetadataListener] = (),
        controller: Callable[[RaftDriver], ControllerListener] | None = None,
        snapshot_source: Callable[[], MetadataImage] | None = None,
    ) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.is_voter = config.is_voter
        self.voters = dict(config.voters)
        log_dir = config.log_dir
        self.store = FileElectionStore(quorum_state_path(log_dir))
        stored = self.store.read()
        if self.is_voter and stored is not None and set(self.store.voters) != set(self.voters):
            raise QuorumConfigError(
                f"controller.quorum.voters lists {sorted(self.voters)} but {self.store.path} was "
                f"formatted for {sorted(self.store.voters)}; fix the config or re-format the node"
            )
        if not self.is_voter and (stored is None or set(self.store.voters) != set(self.voters)):
            # An observer's quorum-state only remembers the last leader it knew: never a vote.
            write_initial(self.store.path, sorted(self.voters), overwrite=True)
            self.store = FileElectionStore(self.store.path)
        self.log = FileRaftLog(metadata_log_dir(log_dir), now_ms=monotonic_ms())
        try:
            core = RaftCore(
                config.node_id,
                frozenset(self.voters),
                self.log,
                self.store,
                random.Random(),
                config.raft,
                monotonic_ms(),
                is_observer=not self.is_voter,
            )
            peers = {i: a for i, a in self.voters.items() if i != config.node_id}
            self.driver = RaftDriver(
                core,
                self.log,
                self.store,
                peers,
                on_commit=self._on_commit,
                on_snapshot_load=self._on_snapshot_load,
                take_snapshot=self._take_snapshot,
                cluster_id=cluster_id,
                **({"open_channel": open_channel} if open_channel else {}),
            )
            self.controller = controller(self.driver) if controller is not None else None
        except BaseException:
            self.log.close()
            raise
        self.listeners: tuple[MetadataListener, ...] = (
            (self.controller,) if self.controller is not None else ()
        ) + tuple(listeners)
        self.snapshot_source = (
            self.controller.image if self.controller is not None else snapshot_source
        )

    @property
    def leader_id(self) -> int | None:
        return self.driver.core.describe().leader_id

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await self.driver.run(task_status=task_status)

    def close(self) -> None:
        self.log.close()

    # -- driver callbacks (run inside the driver's loop, in commit order)
    def _on_commit(self, entries: Sequence[Entry]) -> None:
        records = decode_entries(entries)
        for listener in self.listeners:
            listener.replay_committed(records)

    def _on_snapshot_load(self, snapshot_id: OffsetAndEpoch, data: bytes | None) -> None:
        if data is None:
            log.error("metadata snapshot %s is missing; keeping the current image", snapshot_id)
            return
        image = snapshot_from_bytes(data, snapshot_id.offset, snapshot_id.epoch)
        for listener in self.listeners:
            listener.load_snapshot(image)

    def _take_snapshot(self) -> bytes:
        if self.snapshot_source is None:
            raise RuntimeError("a snapshot was due but no listener keeps an image")
        return snapshot_to_bytes(self.snapshot_source())
