"""All partition logs of one node across its log dirs: open (with recovery unless the last
shutdown was clean), create, delete, retention, flush.ms, checkpoints and meta.properties."""
from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import uuid
from pathlib import Path

from clients.record.batch_header import CorruptBatchError
from kraft.fs import atomic_write, fsync_dir, remove_durably
from kraft.log import file_names as fn
from kraft.log.checkpoint import (
    CheckpointError, read_offset_checkpoint, read_properties, write_offset_checkpoint,
    write_properties)
from kraft.log.cleaner import DEFAULT_MAX_MAP_ENTRIES, CleanResult, clean_log, plan_cleaning
from kraft.log.log import Log, PendingFlush
from kraft.log.log_config import LogConfig

_logger = logging.getLogger(__name__)


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """meta.properties as a dict (keys `version`, `cluster.id`, `node.id`), None if absent."""
    return read_properties(Path(log_dir) / fn.META_PROPERTIES)


def write_meta_properties(log_dir: Path, cluster_id: str, node_id: int) -> None:
    write_properties(Path(log_dir) / fn.META_PROPERTIES,
                     {"version": "1", "cluster.id": cluster_id, "node.id": str(node_id)})


def _read_checkpoint_or_empty(path: Path) -> dict[tuple[str, int], int] | None:
    """None when missing or unreadable: the caller then assumes nothing (full recovery)."""
    if not path.exists():
        return None
    try:
        return read_offset_checkpoint(path)
    except CheckpointError:
        return None


class LogManager:
    def __init__(self, log_dirs: list[Path], default_config: LogConfig, *, now_ms: int) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config
        self._logs: dict[tuple[str, int], Log] = {}
        self._dir_of: dict[tuple[str, int], Path] = {}
        self.recovered_logs = 0          # logs whose open CRC-scanned at least one segment
        self.clean_shutdown: dict[Path, bool] = {}
        self._now_ms = now_ms            # latest time seen; new logs start their flush clock here
        self._cleaner_offsets: dict[tuple[str, int], int] = {}   # first dirty offset per log
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._load_dir(log_dir, now_ms)

    def _load_dir(self, log_dir: Path, now_ms: int) -> None:
        marker = log_dir / fn.CLEAN_SHUTDOWN
        clean = marker.exists()
        recovery = _read_checkpoint_or_empty(log_dir / fn.RECOVERY_POINT_CHECKPOINT)
        if recovery is None:
            clean, recovery = False, {}     # without recovery points nothing can be trusted
        starts = _read_checkpoint_or_empty(log_dir / fn.LOG_START_OFFSET_CHECKPOINT) or {}
        hws = _read_checkpoint_or_empty(log_dir / fn.REPLICATION_OFFSET_CHECKPOINT) or {}
        self._cleaner_offsets.update(
            _read_checkpoint_or_empty(log_dir / fn.CLEANER_OFFSET_CHECKPOINT) or {})
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            if entry.name.endswith(fn.DELETE_DIR_SUFFIX):
                shutil.rmtree(entry.path, ignore_errors=True)   # a delete interrupted by a crash
                continue
            tp = fn.parse_topic_partition(entry.name)
            if tp is None or tp[0] == fn.METADATA_TOPIC:   # the Raft metadata log is kraft.raft's
                continue
            if tp in self._logs:
                raise RuntimeError(f"partition {tp[0]}-{tp[1]} exists in both {self._dir_of[tp]} "
                                   f"and {log_dir}; remove one copy")
            log = Log.open(Path(entry.path), self.default_config,
                           recovery_point=recovery.get(tp, 0), log_start_offset=starts.get(tp, 0),
                           now_ms=now_ms, clean_shutdown=clean)
            log.high_watermark = hws.get(tp, log.log_start_offset)
            if log.recovered_segments:
                self.recovered_logs += 1
            self._logs[tp] = log
            self._dir_of[tp] = log_dir
        self.clean_shutdown[log_dir] = clean
        # From here on a crash is unclean until close() writes the marker again.
        remove_durably(marker)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None,
                          topic_id: str = "", *, now_ms: int | None = None) -> Log:
        tp = (topic, partition)
        log = self._logs.get(tp)
        if log is None:
            # Kafka's choice: the log dir holding the fewest partitions.
            counts = {d: 0 for d in self.log_dirs}
            for d in self._dir_of.values():
                counts[d] += 1
            log_dir = min(self.log_dirs, key=lambda d: counts[d])
            log = Log.open(log_dir / fn.partition_dir_name(topic, partition),
                           config or self.default_config,
                           now_ms=self._now_ms if now_ms is None else now_ms)
            fsync_dir(log_dir)
            self._logs[tp] = log
            self._dir_of[tp] = log_dir
        elif config is not None and config != log.config:
            log.update_config(config)
        if topic_id:
            log.assign_topic_id(topic_id)
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename to `<dir>.<uuid>-delete` first so a crash mid-delete never resurrects it."""
        tp = (topic, partition)
        log = self._logs.pop(tp, None)
        if log is None:
            return
        log_dir = self._dir_of.pop(tp)
        self._cleaner_offsets.pop(tp, None)   # a recreated partition starts all dirty
        log.close()
        doomed = log_dir / f"{log.dir.name}.{uuid.uuid4().hex}{fn.DELETE_DIR_SUFFIX}"
        os.replace(log.dir, doomed)
        fsync_dir(log_dir)
        shutil.rmtree(doomed, ignore_errors=True)

    def logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def checkpoint(self) -> None:
        write_checkpoints(self.checkpoint_offsets())

    def checkpoint_offsets(self) -> list[DirCheckpoints]:
        """What each dir's recovery-point, log-start and replication checkpoints say now: taken
        where the logs move, so the (fsyncing) write can run elsewhere."""
        out = []
        for log_dir in self.log_dirs:
            mine = {tp: log for tp, log in self._logs.items() if self._dir_of[tp] == log_dir}
            out.append(DirCheckpoints(
                log_dir, {tp: log.recovery_point for tp, log in mine.items()},
                {tp: log.log_start_offset for tp, log in mine.items()},
                {tp: log.high_watermark for tp, log in mine.items()}))
        return out

    def cleanup(self, now_ms: int) -> int:
        self._now_ms = now_ms
        return sum(log.delete_old_segments(now_ms) for log in self._logs.values())

    def clean_compacted(self, now_ms: int, *,
                        max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
                        ) -> dict[tuple[str, int], CleanResult]:
        """Kafka's log cleaner, run inline: call periodically (log.cleaner.backoff.ms). Every
        compacted log whose dirty part is due (min.cleanable.dirty.ratio, or
        max.compaction.lag.ms) is cleaned, dirtiest first; cleaner-offset-checkpoint records how
        far. Mutates logs: run it where appends and retention run, never beside them."""
        self._now_ms = now_ms
        due = []
        for tp, log in self._logs.items():
            if log.config.compact:
                plan = plan_cleaning(log, self._cleaner_offsets.get(tp, 0), now_ms)
                if plan is not None and plan.due(log.config.min_cleanable_dirty_ratio):
                    due.append((plan.dirty_ratio, tp, plan))
        results, dirs = {}, set()
        for _, tp, plan in sorted(due, key=lambda item: -item[0]):
            try:
                result = clean_log(self._logs[tp], plan, now_ms, max_map_entries=max_map_entries)
            except CorruptBatchError as exc:   # Kafka marks such a log uncleanable; we retry later
                _logger.warning("cannot compact %s-%s: %s", tp[0], tp[1], exc)
                continue
            self._cleaner_offsets[tp] = result.end_offset
            dirs.add(self._dir_of[tp])
            results[tp] = result
        for log_dir in dirs:
            write_offset_checkpoint(log_dir / fn.CLEANER_OFFSET_CHECKPOINT,
                                    {tp: offset for tp, offset in self._cleaner_offsets.items()
                                     if self._dir_of.get(tp) == log_dir})
        return results

    def flush_due(self, now_ms: int) -> None:
        """Call periodically: flush.ms, and the fsync of segments rolled since the last call."""
        for pending in self.due_flushes(now_ms):
            pending.fsync()
            pending.log.flushed(pending)

    def due_flushes(self, now_ms: int) -> list[PendingFlush]:
        """The periodic flush's fsyncs, for a thread to run; each log's `flushed` after."""
        self._now_ms = now_ms
        return [p for p in (log.due_flush(now_ms) for log in self._logs.values()) if p is not None]

    def close(self) -> None:
        """Flush everything, checkpoint, close, then mark each dir cleanly shut down."""
        for log in self._logs.values():
            log.flush()
        self.checkpoint()
        for log in self._logs.values():
            log.close()
        for log_dir in self.log_dirs:
            atomic_write(log_dir / fn.CLEAN_SHUTDOWN, b"")
        self._logs.clear()
        self._dir_of.clear()


@dataclasses.dataclass(frozen=True)
class DirCheckpoints:
    log_dir: Path
    recovery_points: dict[tuple[str, int], int]
    log_start_offsets: dict[tuple[str, int], int]
    high_watermarks: dict[tuple[str, int], int]


def write_checkpoints(checkpoints: list[DirCheckpoints]) -> None:
    """Write (crash-safe: tmp, fsync, rename) what `checkpoint_offsets` took; safe off the loop,
    as it touches only these values and the checkpoint files."""
    for c in checkpoints:
        write_offset_checkpoint(c.log_dir / fn.RECOVERY_POINT_CHECKPOINT, c.recovery_points)
        write_offset_checkpoint(c.log_dir / fn.LOG_START_OFFSET_CHECKPOINT, c.log_start_offsets)
        write_offset_checkpoint(c.log_dir / fn.REPLICATION_OFFSET_CHECKPOINT, c.high_watermarks)
