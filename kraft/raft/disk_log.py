"""RaftLog on disk: the metadata log in the partition log engine (one v2 batch per Entry, epoch in
partitionLeaderEpoch, control bit for Raft records) plus the snapshot files beside its segments."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from clients.record.codec import decode_batch, encode_batch, iter_batches
from kraft.fs import fsync_dir, remove_durably
from kraft.log import file_names
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.raft import snapshot_files
from kraft.raft.log import NO_EPOCH, UNKNOWN_EPOCH_END, Entry, EpochEndOffset, OffsetAndEpoch

# Kafka's metadata.log.segment.bytes default; the batch cap is KafkaRaftClient's 8 MiB.
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
MAX_BATCH_BYTES = 8 * 1024 * 1024
READ_CHUNK_BYTES = 1024 * 1024
NO_TIMESTAMP = -1

_log = logging.getLogger(__name__)


class MetadataLogError(Exception):
    """The metadata log cannot be opened safely (its start is covered by no readable snapshot)."""


class FileRaftLog:
    # Like MemoryRaftLog: a follower half-way through fetching the previous snapshot can finish.
    SNAPSHOTS_KEPT = 2

    def __init__(
        self,
        dir: Path,
        *,
        now_ms: int,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        clock: Callable[[], int] | None = None,
    ) -> None:
        """Open (creating if missing) the metadata log in `dir`, `<log_dir>/__cluster_metadata-0`.
        `clock` stamps record timestamps and drives segment.ms rolls; else records carry -1."""
        self.dir = Path(dir)
        self._clock = clock
        self.dir.mkdir(parents=True, exist_ok=True)
        fsync_dir(self.dir.parent)
        ids, self.damaged_snapshots = snapshot_files.scan_snapshots(self.dir)
        self._snapshots = list(ids)  # sorted by offset, all readable
        latest = self._snapshots[-1] if self._snapshots else None
        # Retention and size limits are the snapshot's job here; the engine only deletes segments
        # below the log start offset that create_snapshot moves.
        config = LogConfig(
            segment_bytes=segment_bytes,
            retention_ms=-1,
            retention_bytes=-1,
            max_message_bytes=MAX_BATCH_BYTES,
        )
        # recovery_point=0 and no clean-shutdown marker: every open CRC-scans the whole (small)
        # metadata log and cuts a torn tail, so no recovery-point checkpoint is needed. That scan
        # also rebuilds the epoch cache from the batches themselves; the old checkpoint goes, as it
        # was cut at the log start and a damaged snapshot can move the start back below it.
        remove_durably(self.dir / file_names.LEADER_EPOCH_CHECKPOINT)
        self._log = Log.open(
            self.dir,
            config,
            recovery_point=0,
            now_ms=now_ms,
            log_start_offset=latest.offset if latest else 0,
        )
        covered = latest.offset if latest else 0
        if self._log.log_start_offset > covered:
            self._log.close()
            damaged = ", ".join(str(p) for p in self.damaged_snapshots) or "none"
            raise MetadataLogError(
                f"metadata log at {self.dir} starts at offset {self._log.log_start_offset} but no "
                f"readable snapshot covers the offsets below it (damaged snapshots: {damaged}); "
                f"restore the snapshot or re-format this node with: kraft format --config "
                f"<server.properties>"
            )
        if latest is not None:
            self._drop_entries_contradicting(latest)
        # Make whatever survived durable now, so flushed_offset means the same as before the crash.
        self._log.flush()

    def _drop_entries_contradicting(self, snap: OffsetAndEpoch) -> None:
        """A crash inside install_snapshot (snapshot renamed, old log not yet truncated) leaves
        entries of an older history after the snapshot; Kafka's rule: they go."""
        cache = self._log.leader_epoch_cache
        if self.log_end_offset > self.log_start_offset and (
            cache.latest_epoch < snap.epoch
            or cache.epoch_for_offset(self.log_start_offset) < snap.epoch
        ):
            _log.warning(
                "metadata log %s: entries after snapshot %s are older than it; dropping",
                self.dir,
                snap,
            )
            self._log.truncate_fully_and_start_at(snap.offset)

    @property
    def engine(self) -> Log:
        """The underlying partition log (for tools that inspect segments)."""
        return self._log

    def close(self) -> None:
        self._log.flush()
        self._log.close()

    # -- reads ------------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_offset(self) -> int:
        # Entries below the log start are covered by a durable snapshot.
        return max(self._log.recovery_point, self.log_start_offset)

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshots[-1] if self._snapshots else None

    @property
    def last_fetched_epoch(self) -> int:
        if self.log_end_offset > self.log_start_offset:
            return self._log.leader_epoch_cache.latest_epoch
        snap = self.latest_snapshot_id
        return snap.epoch if snap else NO_EPOCH

    def epoch_at(self, offset: int) -> int:
        start, end = self.log_start_offset, self.log_end_offset
        if start <= offset < end:
            return self._log.leader_epoch_cache.epoch_for_offset(offset)
        snap = self.latest_snapshot_id
        if offset == start - 1 and snap is not None:
            return snap.epoch
        if offset == -1:
            return NO_EPOCH
        raise IndexError(f"offset {offset} is outside the log [{start}, {end})")

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        last = self.last_fetched_epoch
        if epoch >= last:
            return EpochEndOffset(last, self.log_end_offset)
        starts = self._log.leader_epoch_cache.entries
        i = 0
        while i < len(starts) and starts[i][0] <= epoch:
            i += 1
        if i == 0:
            # Older than every entry kept: only the snapshot (if as old) can answer.
            snap = self.latest_snapshot_id
            if snap is not None and snap.epoch <= epoch:
                return EpochEndOffset(snap.epoch, self.log_start_offset)
            if snap is None and epoch >= NO_EPOCH and self.log_start_offset == 0:
                return EpochEndOffset(NO_EPOCH, 0)
            return UNKNOWN_EPOCH_END
        return EpochEndOffset(starts[i - 1][0], starts[i][1])

    def read(self, offset: int, max_entries: int) -> list[Entry]:
        if offset < self.log_start_offset:
            raise IndexError(f"offset {offset} is below the log start {self.log_start_offset}")
        end = min(self.log_end_offset, offset + max(max_entries, 0))
        out: list[Entry] = []
        # Log.read returns whole batches from one segment per call: loop across segments.
        while offset < end:
            data = self._log.read(offset, READ_CHUNK_BYTES, max_offset=end).records
            if not data:
                break
            before = offset
            for pos, _ in iter_batches(data):
                header, records = decode_batch(data, pos)
                out.append(
                    Entry(
                        header.base_offset,
                        header.partition_leader_epoch,
                        records[0].value or b"",
                        header.is_control,
                    )
                )
                offset = header.next_offset
            if offset == before:
                break  # a batch larger than the chunk is returned whole, so this is damage
        return out

    # -- writes -----------------------------------------------------------------------------------
    def append(self, entries: Sequence[Entry]) -> None:
        if not entries:
            return
        expected, last_epoch = self.log_end_offset, self.last_fetched_epoch
        for e in entries:
            if e.offset != expected:
                raise ValueError(f"append at {e.offset}, log end is {expected}")
            if e.epoch < last_epoch:
                raise ValueError(f"epoch {e.epoch} after {last_epoch}")
            expected, last_epoch = expected + 1, e.epoch
        now_ms = self._clock() if self._clock else None
        ts = NO_TIMESTAMP if now_ms is None else now_ms
        records = b"".join(
            encode_batch(
                [(None, bytes(e.payload), (), ts)],
                base_offset=e.offset,
                partition_leader_epoch=e.epoch,
                is_control=e.control,
            )
            for e in entries
        )
        self._log.append_as_follower(records, now_ms=now_ms)

    def truncate_to(self, offset: int) -> None:
        if offset < self.log_start_offset:
            raise ValueError(f"truncate to {offset} below the log start {self.log_start_offset}")
        if offset >= self.log_end_offset:
            return
        self._log.truncate_to(offset)

    def flush(self) -> None:
        self._log.flush()

    # -- snapshots --------------------------------------------------------------------------------
    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        start = self.log_start_offset
        if snapshot_id.offset < start:
            return  # a snapshot was installed meanwhile: this older one is of no use
        if snapshot_id.offset > self.log_end_offset:
            raise ValueError(f"snapshot {snapshot_id} outside [{start}, {self.log_end_offset}]")
        if snapshot_id.epoch != self.epoch_at(snapshot_id.offset - 1):
            raise ValueError(f"snapshot {snapshot_id} epoch differs from the log's")
        snapshot_files.write_snapshot(self.dir, snapshot_id, data)
        self._remember(snapshot_id)
        log = self._log
        # The engine deletes only below its high watermark, which Raft does not use: lift it.
        log.high_watermark = log.log_end_offset
        log.maybe_increment_log_start_offset(snapshot_id.offset)
        log.delete_old_segments(self._clock() if self._clock else 0)
        self._forget_old_snapshots(self.SNAPSHOTS_KEPT)

    def install_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        # Snapshot first: a crash before the truncation is repaired at open
        # (_drop_entries_contradicting); the other order could leave a log with no state below it.
        snapshot_files.write_snapshot(self.dir, snapshot_id, data)
        self._remember(snapshot_id)
        self._log.truncate_fully_and_start_at(snapshot_id.offset)
        self._log.flush()
        for old in [s for s in self._snapshots if s != snapshot_id]:
            self._snapshots.remove(old)
            snapshot_files.delete_snapshot(self.dir, old)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes | None:
        """Raises snapshot_files.CorruptSnapshotError if the file was damaged since open."""
        if snapshot_id not in self._snapshots:
            return None
        return snapshot_files.read_snapshot(self.dir, snapshot_id)

    def read_snapshot_chunk(
        self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
    ) -> tuple[int, bytes] | None:
        if snapshot_id not in self._snapshots:
            return None
        return snapshot_files.read_snapshot_chunk(self.dir, snapshot_id, position, max_bytes)

    def _remember(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._snapshots:
            self._snapshots.append(snapshot_id)
            self._snapshots.sort()

    def _forget_old_snapshots(self, keep: int) -> None:
        while len(self._snapshots) > keep:
            snapshot_files.delete_snapshot(self.dir, self._snapshots.pop(0))
