"""All partition logs of one node across its log dirs: open (recovery unless shut down cleanly),
create, delete, retention, flush, checkpoints; a failing dir or damaged log goes offline here."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from kraft.fs import atomic_write, fsync_dir, remove_durably
from kraft.log import file_names as fn
from kraft.log.checkpoint import CheckpointError
from kraft.log.log import Log, PendingFlush
from kraft.log.log_config import LogConfig
from kraft.log.log_dir_checkpoints import (  # noqa: F401  (re-exported: callers import here)
    DirCheckpoints,
    read_checkpoint_or_empty,
    read_meta_properties,
    write_checkpoints,
    write_meta_properties,
)
from kraft.log.log_dir_failure import LogDirFailures, StorageError, damaged_replica_reason
from kraft.log.log_manager_cleaning import LogManagerCleaning
from kraft.log.segment import SegmentCorrupt


class LogManager(LogManagerCleaning):
    def __init__(self, log_dirs: list[Path], default_config: LogConfig, *, now_ms: int) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config
        self._logs: dict[tuple[str, int], Log] = {}
        self._dir_of: dict[tuple[str, int], Path] = {}
        self.recovered_logs = 0  # logs whose open CRC-scanned at least one segment
        self.clean_shutdown: dict[Path, bool] = {}
        self._now_ms = now_ms  # latest time seen; new logs start their flush clock here
        self._cleaner_offsets: dict[tuple[str, int], int] = {}  # first dirty offset per log
        self.failures = LogDirFailures()
        # Checkpoint writes (a thread's periodic ones, a truncation's on the loop) one at a time.
        self._checkpoint_lock = threading.Lock()
        # Offline replicas keep their last checkpointed (recovery point, log start, HW), so the
        # next start still knows which of their bytes were flushed.
        self._offline_checkpoints: dict[tuple[str, int], tuple[Path, int, int, int]] = {}
        # Told the (topic, partition)s that just went offline (the replica manager drops them).
        self.on_offline: Callable[[list[tuple[str, int]]], None] = lambda tps: None
        # The first offset of a partition's earliest undecided transaction (None: none), which
        # the cleaner must not pass; the replica manager, which keeps producer state, tells it.
        self.first_unstable_offset: Callable[[str, int], int | None] = lambda t, p: None
        for log_dir in self.log_dirs:
            try:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._load_dir(log_dir, now_ms)
            except OSError as exc:
                self.dir_failed(log_dir, exc, "loading its logs")

    # -- offline dirs and replicas -------------------------------------------------------------
    def dir_failed(self, log_dir: Path, exc: BaseException, during: str) -> None:
        """Take `log_dir` offline (once): close its logs and tell `on_offline` their partitions."""
        if not self.failures.fail_dir(log_dir, exc, during):
            return
        gone = [tp for tp, d in self._dir_of.items() if d == log_dir]
        for tp in gone:
            self._take_offline(tp)
        # Partitions in it that were never opened stay offline too: hosting one of them afresh
        # in another dir would make an empty replica of it.
        try:
            names = os.listdir(log_dir)
        except OSError:
            names = []
        for name in names:
            tp = fn.parse_topic_partition(name)
            if tp is not None and tp[0] != fn.METADATA_TOPIC and tp not in self._logs:
                self._offline_checkpoints.setdefault(tp, (log_dir, 0, 0, 0))
        self.on_offline(gone)

    def replica_failed(self, topic: str, partition: int, problem: object) -> None:
        """Take one replica offline (its files are damaged); its dir stays online."""
        tp = (topic, partition)
        log = self._logs.get(tp)
        if log is None or not self.failures.fail_replica(
            tp, damaged_replica_reason(topic, partition, log.dir, problem)
        ):
            return
        self._take_offline(tp)
        self.on_offline([tp])

    def _take_offline(self, tp: tuple[str, int]) -> None:
        log, log_dir = self._logs.pop(tp), self._dir_of.pop(tp)
        self._offline_checkpoints[tp] = (
            log_dir,
            log.recovery_point,
            log.log_start_offset,
            log.high_watermark,
        )
        try:
            log.close()
        except OSError:
            pass  # its dir is failing: the fds go with the process at worst

    def log_failed(self, topic: str, partition: int, exc: BaseException, during: str) -> str:
        """An operation on a log raised `exc`: an OSError takes its dir offline, damage
        (SegmentCorrupt) the replica. Returns the reason to answer with."""
        tp = (topic, partition)
        log_dir = self._dir_of.get(tp)
        if log_dir is not None:
            if isinstance(exc, SegmentCorrupt):
                self.replica_failed(topic, partition, exc)
            else:
                self.dir_failed(log_dir, exc, f"{during} {topic}-{partition}")
        return self.offline_reason(topic, partition) or str(exc)

    def offline_reason(self, topic: str, partition: int) -> str | None:
        """Why this replica is offline on this node, None when it is not."""
        tp = (topic, partition)
        reason = self.failures.offline_replicas.get(tp)
        if reason is None and tp in self._offline_checkpoints:
            reason = self.failures.offline_dirs.get(self._offline_checkpoints[tp][0])
        return reason

    def offline_partitions(self) -> list[tuple[str, int]]:
        return sorted(tp for tp in self._offline_checkpoints if self.offline_reason(*tp))

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failures.is_dir_offline(d)]

    def _load_dir(self, log_dir: Path, now_ms: int) -> None:
        marker = log_dir / fn.CLEAN_SHUTDOWN
        clean = marker.exists()
        recovery = read_checkpoint_or_empty(
            log_dir / fn.RECOVERY_POINT_CHECKPOINT, "every log in this dir is recovered in full"
        )
        if recovery is None:
            clean, recovery = False, {}  # without recovery points nothing can be trusted
        starts = (
            read_checkpoint_or_empty(
                log_dir / fn.LOG_START_OFFSET_CHECKPOINT,
                "log start offsets are taken from the segments",
            )
            or {}
        )
        hws = (
            read_checkpoint_or_empty(
                log_dir / fn.REPLICATION_OFFSET_CHECKPOINT,
                "high watermarks restart at the log start",
            )
            or {}
        )
        self._cleaner_offsets.update(
            read_checkpoint_or_empty(
                log_dir / fn.CLEANER_OFFSET_CHECKPOINT, "compaction restarts from the log start"
            )
            or {}
        )
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            if entry.name.endswith(fn.DELETE_DIR_SUFFIX):
                shutil.rmtree(entry.path, ignore_errors=True)  # a delete interrupted by a crash
                continue
            tp = fn.parse_topic_partition(entry.name)
            if tp is None or tp[0] == fn.METADATA_TOPIC:  # the Raft metadata log is kraft.raft's
                continue
            if tp in self._logs:
                raise RuntimeError(
                    f"partition {tp[0]}-{tp[1]} exists in both {self._dir_of[tp]} "
                    f"and {log_dir}; remove one copy"
                )
            try:
                log = Log.open(
                    Path(entry.path),
                    self.default_config,
                    recovery_point=recovery.get(tp, 0),
                    log_start_offset=starts.get(tp, 0),
                    now_ms=now_ms,
                    clean_shutdown=clean,
                )
            except (SegmentCorrupt, CheckpointError) as exc:
                self.failures.fail_replica(
                    tp, damaged_replica_reason(tp[0], tp[1], Path(entry.path), exc)
                )
                self._offline_checkpoints[tp] = (
                    log_dir,
                    recovery.get(tp, 0),
                    starts.get(tp, 0),
                    hws.get(tp, 0),
                )
                continue
            log.high_watermark = hws.get(tp, log.log_start_offset)
            log.on_recovery_point_lowered = self._recovery_point_lowered
            if log.recovered_segments:
                self.recovered_logs += 1
            self._logs[tp] = log
            self._dir_of[tp] = log_dir
        self.clean_shutdown[log_dir] = clean
        # From here on a crash is unclean until close() writes the marker again.
        remove_durably(marker)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        topic_id: str = "",
        *,
        now_ms: int | None = None,
    ) -> Log:
        """The partition's log, created in the online dir with the fewest partitions if new.
        Raises StorageError (saying why) when the replica is or just went offline."""
        tp = (topic, partition)
        reason = self.offline_reason(topic, partition)
        if reason is not None:
            raise StorageError(reason)
        log = self._logs.get(tp)
        if log is None:
            online = self.online_dirs
            if not online:
                # Offline like the rest: reads answer why, the heartbeat reports it.
                self._offline_checkpoints[tp] = (next(iter(self.failures.offline_dirs)), 0, 0, 0)
                raise StorageError(self.offline_reason(topic, partition))
            # Kafka's choice: the log dir holding the fewest partitions.
            counts = {d: 0 for d in online}
            for d in self._dir_of.values():
                counts[d] = counts.get(d, 0) + 1
            log_dir = min(online, key=lambda d: counts[d])
            try:
                log = Log.open(
                    log_dir / fn.partition_dir_name(topic, partition),
                    config or self.default_config,
                    now_ms=self._now_ms if now_ms is None else now_ms,
                )
                fsync_dir(log_dir)
                log.on_recovery_point_lowered = self._recovery_point_lowered
            except OSError as exc:
                self._offline_checkpoints[tp] = (log_dir, 0, 0, 0)
                self.dir_failed(log_dir, exc, f"creating {topic}-{partition}")
                raise StorageError(self.offline_reason(topic, partition)) from None
            self._logs[tp] = log
            self._dir_of[tp] = log_dir
        elif config is not None and config != log.config:
            log.update_config(config)
        if log.offset_gaps and not log.config.compact:
            missing = ", ".join(f"{a} to {b - 1}" for a, b in log.offset_gaps)
            self.replica_failed(
                topic,
                partition,
                f"offsets {missing} are missing: a segment file was deleted or damaged",
            )
            raise StorageError(self.offline_reason(topic, partition))
        if topic_id:
            try:
                log.assign_topic_id(topic_id)
            except OSError as exc:
                raise StorageError(self.log_failed(topic, partition, exc, "creating")) from None
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename to `<dir>.<uuid>-delete` first so a crash mid-delete never resurrects it."""
        tp = (topic, partition)
        log = self._logs.pop(tp, None)
        if log is None:
            self._forget_offline(tp)
            return
        log_dir = self._dir_of.pop(tp)
        self._cleaner_offsets.pop(tp, None)  # a recreated partition starts all dirty
        log.close()
        self._remove_dir(log_dir, log.dir)

    def _forget_offline(self, tp: tuple[str, int]) -> None:
        """The metadata log no longer places an offline replica here: its files can go too,
        unless its dir failed (that dir is left alone until a restart)."""
        known = self._offline_checkpoints.pop(tp, None)
        self.failures.forget_replica(tp)
        if known is not None and not self.failures.is_dir_offline(known[0]):
            self._remove_dir(known[0], known[0] / fn.partition_dir_name(*tp))

    def _remove_dir(self, log_dir: Path, dir: Path) -> None:
        try:
            doomed = log_dir / f"{dir.name}.{uuid.uuid4().hex}{fn.DELETE_DIR_SUFFIX}"
            os.replace(dir, doomed)
            fsync_dir(log_dir)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.dir_failed(log_dir, exc, f"deleting {dir.name}")
            return
        shutil.rmtree(doomed, ignore_errors=True)

    def logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def checkpoint(self) -> None:
        self.checkpoints_failed(write_checkpoints(self.checkpoint_offsets()))

    def checkpoint_offsets(self) -> list[DirCheckpoints]:
        """What each online dir's recovery-point, log-start and replication checkpoints say now
        (offline replicas keep their last values): taken where the logs move, so the (fsyncing)
        write can run elsewhere."""
        out = []
        for log_dir in self.online_dirs:
            rows = {
                tp: (log.recovery_point, log.log_start_offset, log.high_watermark)
                for tp, log in self._logs.items()
                if self._dir_of[tp] == log_dir
            }
            rows.update(
                {
                    tp: tuple(values)
                    for tp, (d, *values) in self._offline_checkpoints.items()
                    if d == log_dir
                }
            )
            out.append(
                DirCheckpoints(
                    log_dir,
                    *({tp: v[i] for tp, v in rows.items()} for i in range(3)),
                    logs={tp: log for tp, log in self._logs.items() if self._dir_of[tp] == log_dir},
                    lock=self._checkpoint_lock,
                )
            )
        return out

    def _recovery_point_lowered(self, log: Log) -> None:
        """Kafka's checkpointRecoveryOffsetsInDir after a truncation, before the log is
        appended to again. Raises OSError, the truncation's disk error."""
        log_dir = self._dir_of.get((log.topic, log.partition))
        if log_dir is None:
            return
        failed = write_checkpoints([c for c in self.checkpoint_offsets() if c.log_dir == log_dir])
        if failed:
            raise failed[0][1]

    def checkpoints_failed(self, failures: list[tuple[Path, OSError]]) -> None:
        """What write_checkpoints could not write: those dirs go offline."""
        for log_dir, exc in failures:
            self.dir_failed(log_dir, exc, "writing its checkpoints")

    def _each_log(self, job: Callable[[Log], object], during: str) -> list:
        """Run `job` on every online log; a failure takes that dir or replica offline."""
        out = []
        for (topic, partition), log in list(self._logs.items()):
            if self._logs.get((topic, partition)) is not log:
                continue  # went offline with an earlier one's dir
            try:
                out.append(job(log))
            except (OSError, SegmentCorrupt) as exc:
                self.log_failed(topic, partition, exc, during)
        return out

    def cleanup(self, now_ms: int) -> int:
        self._now_ms = now_ms
        return sum(self._each_log(lambda log: log.delete_old_segments(now_ms), "retention of"))

    def flush_due(self, now_ms: int) -> None:
        """Call periodically: flush.ms, and the fsync of segments rolled since the last call."""
        self.flushes_done(fsync_all(self.due_flushes(now_ms)))

    def due_flushes(self, now_ms: int) -> list[PendingFlush]:
        """The periodic flush's fsyncs, for a thread to run; each log's `flushed` after."""
        self._now_ms = now_ms
        return [
            p
            for p in self._each_log(lambda log: log.due_flush(now_ms), "flushing")
            if p is not None
        ]

    def flushes_done(self, results: list[tuple[PendingFlush, OSError | None]]) -> None:
        """What fsync_all did: recovery points move for the flushes done; a failed one takes
        its dir offline."""
        for pending, exc in results:
            log = pending.log
            if exc is None:
                log.flushed(pending)
            elif self._logs.get((log.topic, log.partition)) is log:
                self.log_failed(log.topic, log.partition, exc, "flushing")

    def close(self) -> None:
        """Flush everything, checkpoint, close, then mark each dir that is still online cleanly
        shut down (a failed dir is recovered in full at the next start)."""
        self._each_log(lambda log: log.flush(), "flushing")
        self.checkpoint()
        self._each_log(lambda log: log.close(), "closing")
        for log_dir in self.online_dirs:
            try:
                atomic_write(log_dir / fn.CLEAN_SHUTDOWN, b"")
            except OSError as exc:
                self.dir_failed(log_dir, exc, "writing its clean-shutdown marker")
        self._logs.clear()
        self._dir_of.clear()


def fsync_all(pending: list[PendingFlush]) -> list[tuple[PendingFlush, OSError | None]]:
    """Run the fsyncs `due_flushes` owes (safe off the loop); each with its error, if any, for
    LogManager.flushes_done on the loop."""
    out = []
    for p in pending:
        try:
            p.fsync()
            out.append((p, None))
        except OSError as exc:
            out.append((p, exc))
    return out
