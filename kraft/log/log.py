"""A partition's log: ordered segments, append as leader (offsets, epoch, LogAppendTime assigned in
place) or follower, rolls and reads of whole-batch byte ranges. Truncation and retention are in
log_retention.py, flushes in log_flush.py (mixins of Log), recovery at open in recovery.py."""

from __future__ import annotations

import logging
import shutil
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clients.record.batch_header import set_base_offset_and_epoch, stamped_prefix
from kraft.log import file_names
from kraft.log.checkpoint import CheckpointError, read_partition_metadata, write_partition_metadata
from kraft.log.file_slice import EMPTY as EMPTY_SLICE
from kraft.log.file_slice import FileSlice
from kraft.log.leader_epoch_cache import LeaderEpochCache
from kraft.log.log_config import LogConfig
from kraft.log.log_flush import LogFlush, PendingFlush  # noqa: F401  (PendingFlush: LogManager's)
from kraft.log.log_retention import LogRetention
from kraft.log.log_validator import (  # noqa: F401  (the errors are part of this module's API)
    CorruptRecords,
    OffsetOutOfRange,
    RecordTooLarge,
    stamp_log_append_time,
    validate_records,
)
from kraft.log.recompress import recompress
from kraft.log.recovery import load_segments, offset_gaps
from kraft.log.segment import INT_MAX, BatchInfo, LogSegment, SegmentCorrupt
from kraft.log.transaction_index import AbortedTxn

_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    num_batches: int
    num_records: int
    valid_bytes: int


@dataclass(frozen=True)
class FetchData:
    records: bytes  # whole batches only
    log_start_offset: int
    log_end_offset: int


class Log(LogRetention, LogFlush):
    def __init__(
        self,
        dir: Path,
        config: LogConfig,
        segments: list[LogSegment],
        epoch_cache: LeaderEpochCache,
        now_ms: int,
    ) -> None:
        self.dir = dir
        parsed = file_names.parse_topic_partition(dir.name)
        self.topic, self.partition = parsed if parsed else (dir.name, -1)
        self.config = config
        self._segments = segments
        self._bases = [seg.base_offset for seg in segments]
        self.leader_epoch_cache = epoch_cache
        self.log_end_offset = segments[-1].next_offset
        self.log_start_offset = segments[0].base_offset
        self.recovery_point = self.log_end_offset
        self._high_watermark = self.log_start_offset
        self.recovered_segments = 0  # segments CRC-scanned at open (0 after a clean shutdown)
        # Holes in the offsets found at open: lost records unless the topic is compacted.
        self.offset_gaps: list[tuple[int, int]] = []
        self.topic_id: str | None = None
        self._last_flush_ms = now_ms
        self._roll_flush_offset = 0  # rolled segments below this still await their fsync
        self._dir_dirty = False  # a segment file was created or deleted since the last fsync
        # Told when a truncation lowers the recovery point, before anything is appended again:
        # LogManager rewrites the checkpoint, which must not go on claiming flushed the offsets
        # that will be written anew (a crash would trust them unscanned). May raise OSError.
        self.on_recovery_point_lowered: Callable[[Log], None] | None = None
        # Moves whenever a segment below the active one may have changed or gone (truncation,
        # retention, a cleaner swap, close): a cleaning pass run off the loop swaps only if it
        # has not moved since the pass read the segments. Appends and rolls leave it alone.
        self.segments_generation = 0

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        now_ms: int,
        clean_shutdown: bool = False,
    ) -> Log:
        """Open (creating if missing) the log in `dir`; see recovery.load_segments for what is
        checked. `clean_shutdown` skips the CRC scan (LogManager passes it)."""
        dir = Path(dir)
        dir.mkdir(parents=True, exist_ok=True)
        epoch_path = dir / file_names.LEADER_EPOCH_CHECKPOINT
        try:
            cache, trust_epochs = LeaderEpochCache.load(epoch_path), True
        except CheckpointError as exc:
            _logger.warning(
                "ignoring a damaged checkpoint: %s; the log is recovered in full to rebuild it", exc
            )
            cache, trust_epochs = LeaderEpochCache(epoch_path), False  # rebuilt by a full scan
        segments, scanned, recovery_point = load_segments(
            dir,
            config,
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
            trust_epochs=trust_epochs,
            epoch_cache=cache,
            now_ms=now_ms,
        )
        if not segments:
            segments = [
                LogSegment.create(
                    dir, log_start_offset, config.index_interval_bytes, config.segment_index_bytes
                )
            ]
        log = cls(dir, config, segments, cache, now_ms)
        log.recovered_segments = scanned
        try:
            log.offset_gaps = offset_gaps(segments)
        except SegmentCorrupt:
            log.close()
            raise
        log.recovery_point = (
            log.log_end_offset if clean_shutdown else min(recovery_point, log.log_end_offset)
        )
        cache.truncate_from_end(log.log_end_offset)
        if log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(log_start_offset)
        elif log_start_offset > log.log_start_offset:
            log.log_start_offset = log_start_offset
        cache.truncate_from_start(log.log_start_offset)
        log._high_watermark = log.log_start_offset
        log.topic_id = read_partition_metadata(dir / file_names.PARTITION_METADATA)
        return log

    # -- state -------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        # Kafka's clamp: the HW never leaves [log_start_offset, log_end_offset].
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    def size_in_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    def assign_topic_id(self, topic_id: str) -> None:
        """Write partition.metadata (once; the id of a partition never changes)."""
        if topic_id and topic_id != self.topic_id:
            write_partition_metadata(self.dir / file_names.PARTITION_METADATA, topic_id)
            self.topic_id = topic_id

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self._segments[-1].index_interval_bytes = config.index_interval_bytes

    def _name(self) -> str:
        return f"{self.topic}-{self.partition}"

    # -- appends -----------------------------------------------------------------------------
    def append_as_leader(
        self, records: bytes, leader_epoch: int, now_ms: int, *, from_coordinator: bool = False
    ) -> AppendInfo:
        """The producer's bytes are written as they are, each batch's first bytes replaced by
        the stamp (offsets, epoch: outside the CRC); LogAppendTime, inside the CRC, needs a copy.
        `from_coordinator`: the broker's own control batches (transaction markers)."""
        buf = records
        headers = validate_records(
            buf,
            self.config,
            self._name(),
            leader=True,
            now_ms=now_ms,
            from_coordinator=from_coordinator,
        )
        rewritten = recompress(buf, headers, self.config.compression_type)
        if rewritten is not None:  # the topic's compression.type differs from the producer's
            buf = rewritten
            headers = validate_records(buf, self.config, self._name(), leader=True, now_ms=now_ms)
        first_offset = next_offset = self.log_end_offset
        if not headers:
            return AppendInfo(first_offset, first_offset - 1, -1, -1, 0, 0, 0)
        log_append = self.config.log_append_time
        if log_append:
            buf = bytearray(buf)
        infos, max_timestamp, num_records = [], -1, 0
        for pos, header in headers:
            batch_max, stamp = header.max_timestamp, None
            if log_append:
                set_base_offset_and_epoch(buf, pos, next_offset, leader_epoch)
                stamp_log_append_time(buf, pos, header, now_ms)
                batch_max = now_ms
            else:
                stamp = stamped_prefix(header, next_offset, leader_epoch)
            last = next_offset + header.last_offset_delta
            infos.append(BatchInfo(pos, header.size, next_offset, last, batch_max, stamp))
            max_timestamp = max(max_timestamp, batch_max)
            num_records += header.records_count
            next_offset = last + 1
        if leader_epoch > self.leader_epoch_cache.latest_epoch:
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
        self._write(buf, infos, now_ms)
        self._maybe_flush_after_append(now_ms)
        return AppendInfo(
            first_offset,
            next_offset - 1,
            max_timestamp,
            now_ms if log_append else -1,
            len(infos),
            num_records,
            len(buf),
        )

    def append_as_follower(self, records: bytes, *, now_ms: int | None = None) -> AppendInfo:
        """Offsets and epochs come from the leader. Base offsets must continue from the log end
        offset (compacted topics may skip forward); `now_ms` enables segment.ms rolls."""
        headers = validate_records(records, self.config, self._name(), leader=False)
        expected = first_offset = self.log_end_offset
        if not headers:
            return AppendInfo(first_offset, first_offset - 1, -1, -1, 0, 0, 0)
        gaps_ok = self.config.compact
        infos, max_timestamp, num_records = [], -1, 0
        for pos, header in headers:
            if header.base_offset != expected and not (gaps_ok and header.base_offset > expected):
                raise CorruptRecords(
                    f"batch at offset {header.base_offset} for {self._name()} does not continue the "
                    f"log at {expected}; truncate or fetch from {expected}; nothing was appended"
                )
            infos.append(
                BatchInfo(
                    pos, header.size, header.base_offset, header.last_offset, header.max_timestamp
                )
            )
            max_timestamp = max(max_timestamp, header.max_timestamp)
            num_records += header.records_count
            expected = header.next_offset
        cache = self.leader_epoch_cache
        for _, header in headers:
            if header.partition_leader_epoch > cache.latest_epoch:
                cache.assign(header.partition_leader_epoch, header.base_offset)
        self._write(records, infos, now_ms)
        self._maybe_flush_after_append(now_ms)
        return AppendInfo(
            headers[0][1].base_offset,
            expected - 1,
            max_timestamp,
            -1,
            len(infos),
            num_records,
            len(records),
        )

    def _write(self, buf, infos: list[BatchInfo], now_ms: int | None) -> None:
        """Pack consecutive batches into the active segment, rolling when the next would not fit;
        one write per segment touched."""
        seg_bytes, i, n = self.config.segment_bytes, 0, len(infos)
        while i < n:
            first = infos[i]
            seg = self._segments[-1]
            if self._should_roll(seg, first, now_ms):
                seg = self._roll(max(self.log_end_offset, first.base_offset))
            size, j = seg.size + first.size, i + 1
            room = (
                min(
                    seg.offset_index.max_entries - len(seg.offset_index),
                    seg.time_index.max_entries - len(seg.time_index),
                )
                - 1
            )
            while (
                j < n
                and j - i < room
                and size + infos[j].size <= seg_bytes
                and infos[j].last_offset - seg.base_offset <= INT_MAX
            ):
                size += infos[j].size
                j += 1
            last = infos[j - 1]
            seg.append(buf, first.position, last.position + last.size, infos[i:j], now_ms)
            self.log_end_offset = seg.next_offset
            i = j

    def _should_roll(self, seg: LogSegment, first: BatchInfo, now_ms: int | None) -> bool:
        if first.last_offset - seg.base_offset > INT_MAX:
            return True  # relative offsets must fit the index's 4 bytes
        if seg.size == 0:
            return False
        return (
            seg.size + first.size > self.config.segment_bytes
            or (
                now_ms is not None
                and seg.roll_base_ms is not None
                and now_ms - seg.roll_base_ms > self.config.segment_ms
            )
            or seg.offset_index.is_full
            or seg.time_index.is_full
        )

    def _roll(self, base_offset: int) -> LogSegment:
        active = self._segments[-1]
        if active.size == 0:
            if active.base_offset == base_offset:
                return active
            active.delete()
            self._segments.pop()
            self._bases.pop()
        else:
            # Kafka fsyncs a rolled segment in the background; due_flush owes it (the node's
            # flusher thread fsyncs it, indexes included) unless the recovery point already
            # passed it (flushed inline just before): then its sealed time index is fsynced here.
            active.seal(fsync=self.recovery_point >= base_offset)
            self._roll_flush_offset = base_offset
        seg = LogSegment.create(
            self.dir, base_offset, self.config.index_interval_bytes, self.config.segment_index_bytes
        )
        self._segments.append(seg)
        self._bases.append(base_offset)
        self._dir_dirty = True
        return seg

    def maybe_roll(self, now_ms: int) -> None:
        """Roll an old or full active segment even without an append (segment.ms)."""
        seg = self._segments[-1]
        if seg.size and (
            (seg.roll_base_ms is not None and now_ms - seg.roll_base_ms > self.config.segment_ms)
            or seg.size >= self.config.segment_bytes
        ):
            self._roll(self.log_end_offset)

    # -- reads -------------------------------------------------------------------------------
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> FetchData:
        found = self.read_slice(
            start_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
        )
        return FetchData(found.read(), self.log_start_offset, self.log_end_offset)

    def read_slice(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> FileSlice:
        """Where the whole batches from `start_offset` (at most `max_bytes`, below `max_offset`;
        the first batch whole even if bigger when `min_one_batch`) lie, not yet read."""
        start, end = self.log_start_offset, self.log_end_offset
        if start_offset < start or start_offset > end:
            raise OffsetOutOfRange(
                f"offset {start_offset} is out of range for {self._name()}: the log holds offsets "
                f"{start} to {end - 1}; fetch from {start} (earliest) or {end} (latest)"
            )
        if start_offset == end or (max_offset is not None and start_offset >= max_offset):
            return EMPTY_SLICE
        i = bisect_right(self._bases, start_offset) - 1
        found = EMPTY_SLICE
        for seg in self._segments[max(i, 0) :]:
            rng = seg.read_range(start_offset, max_bytes, max_offset, min_one_batch)
            if rng is not None:
                found = FileSlice(seg.fd, *rng) if rng[1] else EMPTY_SLICE
                break
        if min_one_batch and not self.config.compact:
            self._check_read(
                start_offset,
                found.base_offset if found.size else None,
                end if max_offset is None else min(max_offset, end),
            )
        return found

    def _check_read(self, start_offset: int, first: int | None, limit: int) -> None:
        """Below `limit` a read must start with the batch holding `start_offset` (`first`: the
        base offset of the batch read, None if none): outside compaction, no batch there or a
        later one means records are missing from the log (a deleted or damaged segment). Raise
        rather than answer "no data" or skip them."""
        if first is None:
            i = bisect_right(self._bases, start_offset) - 1
            found = None
            for seg in self._segments[max(i, 0) :]:
                found = seg.translate_offset(start_offset)
                if found is not None:
                    break
            # A batch straddling the limit (the high watermark) is legitimately held back.
            first = limit if found is None else found[1].base_offset
        if first > start_offset:
            raise SegmentCorrupt(
                f"offsets {start_offset} to {min(first, limit) - 1} of {self._name()} are missing "
                f"from its log in {self.dir} although it holds offsets up to {limit - 1}: a "
                "segment file is missing or damaged"
            )

    # -- aborted transactions (read_committed) ------------------------------------------------
    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Index an aborted transaction in the segment holding its ABORT marker (none: the
        marker is below the log start, nothing left to hide)."""
        if txn.last_offset < self.log_start_offset or txn.last_offset >= self.log_end_offset:
            return
        i = bisect_right(self._bases, txn.last_offset) - 1
        self._segments[max(i, 0)].txn_index.append(txn)

    def fsync_txn_indexes(self) -> None:
        """Any thread (the producer-state snapshot writer): fsync every segment's .txnindex."""
        for seg in list(self._segments):
            seg.txn_index.fsync()

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions with data in [fetch_offset, upper_bound) (Kafka's
        collectAbortedTransactions): from the segment holding `fetch_offset` on, since a
        transaction's entry lives with its marker, at or after its data."""
        i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        out: list[AbortedTxn] = []
        for seg in self._segments[i:]:
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for seg in self._segments:
            if seg.max_timestamp >= timestamp:
                found = seg.find_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self.segments_generation += 1
        self._segments[-1].seal()
        for seg in self._segments:
            seg.close()

    def delete(self) -> None:
        """Close and remove the partition directory."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
