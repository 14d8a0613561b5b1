"""Log compaction for `cleanup.policy=compact` (Kafka's LogCleaner): plan which segments of a log may
be cleaned, map each key of the dirty part to its last offset, and rewrite the segments keeping
only each key's latest record, at its original offset.

Rules (Kafka's, with the choices noted):
- Never cleaned: the active segment, any segment not wholly below the high watermark, and from the
  first dirty segment whose newest timestamp is within min.compaction.lag.ms on.
- The dirty part runs from the cleaner checkpoint to there (fewer segments if the offset map
  fills: it holds whole segments, `max_map_entries` keys as a soft cap). Every cleanable segment,
  clean or dirty, is rewritten against that map, in groups that merge small segments up to
  segment.bytes (and the index size and 2^31 relative offsets).
- A record is kept iff it has a key, no later record in the map has the same key, and it is not a
  tombstone (null value) from a segment whose newest timestamp is older than
  delete.retention.ms. Keyless records cannot be produced to a compacted topic (log_validator);
  any found (a topic switched from delete) are dropped, as Kafka's cleaner does.
- A batch keeps its base offset, lastOffsetDelta, leader epoch, producer id/epoch, base sequence,
  attributes and base timestamp, so offsets, epochs and idempotent sequences survive. A batch
  that keeps all its records is copied byte for byte; one that loses some is rebuilt from its
  kept records' bytes (recompressed with its codec, new CRC); an emptied one is dropped, except
  the last batch of each producer id, which stays as an empty batch so the producer state can
  still be rebuilt from the log (Kafka retains it for live producers; we keep it always: the
  broker does not expire producer ids).
- Transactions (cleaner_txns.py): nothing from the first unstable offset on is cleanable (an
  undecided transaction); aborted transactions' batches are removed and never enter the offset
  map; a COMMIT/ABORT marker goes once no batch of its transaction remains and its segment is
  older than delete.retention.ms (the tombstone rule); a producer's last batch stays.
Each group is rewritten by cleaner_rewrite.py and swapped in crash-safely (cleaner_swap.py).
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass

from clients.record.batch_header import CONTROL_FLAG
from clients.record.codec import decode_records
from clients.record.compression import MAX_DECOMPRESSED_SIZE
from kraft.log.cleaner_rewrite import SegmentCleaner, on_marker, read_batches
from kraft.log.cleaner_swap import swap_in
from kraft.log.cleaner_txns import CleanedTransactions
from kraft.log.disk_steps import Steps, run_inline
from kraft.log.log_retention import largest_timestamp
from kraft.log.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kraft.log.segment import INT_MAX, LogSegment
from kraft.log.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE

# A Python dict entry costs ~100 bytes with its key: about 100 MB, Kafka's dedupe buffer order.
DEFAULT_MAX_MAP_ENTRIES = 1 << 20


@dataclass(frozen=True)
class CleanPlan:
    first_dirty: int  # the cleaner checkpoint, clamped into the log
    end_offset: int  # first offset not cleanable: base offset of segments[end_index]
    end_index: int  # segments[:end_index] may be cleaned
    clean_bytes: int
    dirty_bytes: int
    max_lag_exceeded: bool  # the oldest dirty record waited max.compaction.lag.ms: clean anyway

    @property
    def dirty_ratio(self) -> float:
        return self.dirty_bytes / max(self.clean_bytes + self.dirty_bytes, 1)

    def due(self, min_cleanable_dirty_ratio: float) -> bool:
        return self.dirty_bytes > 0 and (
            self.max_lag_exceeded or self.dirty_ratio > min_cleanable_dirty_ratio
        )


@dataclass(frozen=True)
class CleanResult:
    first_dirty: int
    end_offset: int  # the new cleaner checkpoint: everything below it is clean
    records_read: int
    records_kept: int
    bytes_before: int
    bytes_after: int
    segments_before: int
    segments_after: int


def plan_cleaning(
    log, checkpoint: int, now_ms: int, first_unstable_offset: int | None = None
) -> CleanPlan | None:
    """What a cleaning of `log` would cover from the checkpointed first dirty offset; None when
    nothing dirty is cleanable. Never past `first_unstable_offset` (an undecided transaction's
    first offset: what it holds may still be aborted)."""
    segs, config = log.segments, log.config
    if checkpoint > log.log_end_offset:
        checkpoint = log.log_start_offset  # the log was truncated or recreated under it
    first_dirty = max(checkpoint, log.log_start_offset)
    lag, end_index = config.min_compaction_lag_ms, 0
    limit = (
        log.high_watermark
        if first_unstable_offset is None
        else min(log.high_watermark, first_unstable_offset)
    )
    for i in range(len(segs) - 1):
        upper = segs[i + 1].base_offset
        if upper > limit:
            break
        if lag > 0 and upper > first_dirty and largest_timestamp(segs[i]) > now_ms - lag:
            break
        end_index = i + 1
    if end_index == 0 or segs[end_index].base_offset <= first_dirty:
        return None
    clean = dirty = 0
    first_dirty_seg = None
    for i in range(end_index):
        if segs[i + 1].base_offset <= first_dirty:
            clean += segs[i].size
        else:
            dirty += segs[i].size
            first_dirty_seg = first_dirty_seg or segs[i]
    oldest = _first_timestamp(first_dirty_seg)
    exceeded = oldest >= 0 and now_ms - oldest > config.max_compaction_lag_ms
    return CleanPlan(first_dirty, segs[end_index].base_offset, end_index, clean, dirty, exceeded)


def clean_log(
    log, plan: CleanPlan, now_ms: int, *, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES
) -> CleanResult:
    """Compact `log` as planned, all on this thread. Call right after plan_cleaning: retention or
    truncation in between would move the segments the plan counts."""
    result = run_inline(cleaning_steps(log, plan, now_ms, max_map_entries=max_map_entries))
    if result is None:
        raise RuntimeError(f"the segments of {log.dir.name} changed during cleaning")
    return result


def cleaning_steps(
    log, plan: CleanPlan, now_ms: int, *, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES
) -> Steps:
    """Compaction of `log` as disk steps (disk_steps.py): building the offset map and writing,
    fsyncing and sealing each group's `.cleaned` segment are yielded (a worker thread may run
    them); each swap runs here, on the loop that owns the log, and only while the log's
    segments are still the ones read. Returns the CleanResult, or None when the log changed
    under the pass (the rest is abandoned, its `.cleaned` file deleted: the next round redoes
    it)."""
    cleaning = CleaningPass(log, plan, now_ms, max_map_entries)
    try:
        yield cleaning.build_offset_map
        for k in range(len(cleaning.groups)):
            new = yield functools.partial(cleaning.write_group, k)
            if not cleaning.swap_group(k, new):
                return None
        return cleaning.result()
    finally:
        cleaning.close()


class CleaningPass:
    """One cleaning of one log, split at the thread boundary. Made on the loop, it snapshots the
    segments: each read goes through a view with its own fd (a dup: still readable when the loop
    deletes or truncates the segment meanwhile, never an fd number reused for another file) and
    the size it had then. `build_offset_map` and `write_group` touch only those views and new
    `.cleaned` files, so they may run in a worker thread while the loop appends to the active
    segment (never read past its snapshotted size). `swap_group` runs on the loop."""

    def __init__(self, log, plan: CleanPlan, now_ms: int, max_map_entries: int) -> None:
        self.log, self.plan = log, plan
        self.config = log.config
        self.max_map_entries = max_map_entries
        self.generation = log.segments_generation
        self.originals = log.segments
        self.views = [_read_view(seg) for seg in self.originals]
        # Read here, on the loop: an index file the loop may still append to is not for threads.
        self.aborted = [_aborted_in(log, k) for k in range(len(self.originals))]
        self.txn_indexed = [bool(seg.txn_index.entries) for seg in self.originals]
        self.delete_horizon_ms = now_ms - self.config.delete_retention_ms
        self.groups: list[list[int]] = []  # indexes into originals, one list per group
        self.end_index = plan.end_index
        self.swapped = 0
        self._unswapped: LogSegment | None = None  # written, not yet swapped in
        self._cleaner: SegmentCleaner | None = None

    def build_offset_map(self) -> None:
        """Any thread: the key -> last offset map of the dirty part, and the groups to rewrite."""
        segs, plan = self.views, self.plan
        dirty_from = next(
            i for i in range(plan.end_index) if segs[i + 1].base_offset > plan.first_dirty
        )
        bound = inflate_bound(self.config)
        offset_map, self.end_index = _build_offset_map(
            segs, self.aborted, dirty_from, plan.end_index, self.max_map_entries, bound
        )
        self._cleaner = SegmentCleaner(
            self.log.dir, self.config, segs, offset_map, self.delete_horizon_ms, bound
        )
        position = {id(v): i for i, v in enumerate(segs)}
        self.groups = [
            [position[id(v)] for v in group]
            for group in _group_segments(
                segs[: self.end_index], self.config.segment_bytes, self.config.segment_index_bytes
            )
        ]

    def write_group(self, k: int) -> LogSegment | None:
        """Any thread: group k's cleaned segment, written, fsynced and sealed under its
        `.cleaned` name; None when the group would lose nothing."""
        group = self.groups[k]
        new = self._cleaner.clean_group(
            [self.views[i] for i in group],
            [self.aborted[i] for i in group],
            replaces_txn_index=self.txn_indexed[group[0]],
        )
        self._unswapped = new
        return new

    def swap_group(self, k: int, new: LogSegment | None) -> bool:
        """On the loop: swap group k's cleaned segment in (cleaner_swap.py) if no truncation,
        retention or swap changed the log's segments since the snapshot; else delete it and
        return False."""
        log, old = self.log, [self.originals[i] for i in self.groups[k]]
        # Each earlier group is one segment now: group k starts at index k.
        unchanged = (
            log.segments_generation == self.generation
            and log.segments[k : k + len(old)] == tuple(old)
            and k + len(old) < log.segment_count
        )  # never the active segment
        if not unchanged:
            return False  # close() deletes `new`
        self._unswapped = None
        if new is not None:
            # On the loop, directory fsyncs included: between the check above and the commit
            # point (the .swap rename) no truncation or retention may change these segments.
            swap_in(log, k, old, new)
            self.generation = log.segments_generation
        self.swapped += 1
        return True

    def result(self) -> CleanResult:
        log, segs = self.log, self.originals
        cleaner = self._cleaner
        return CleanResult(
            self.plan.first_dirty,
            segs[self.end_index].base_offset,
            cleaner.records_read,
            cleaner.records_kept,
            sum(v.size for v in self.views[: self.end_index]),
            sum(s.size for s in log.segments[: self.swapped]),
            len(segs),
            log.segment_count,
        )

    def close(self) -> None:
        """Close the views' fds; a cleaned segment never swapped in is deleted."""
        if self._unswapped is not None:
            self._unswapped.delete()
            self._unswapped = None
        for view in self.views:
            os.close(view.fd)
        self.views = []


def _read_view(seg: LogSegment) -> LogSegment:
    """A shallow copy of `seg` reading through a dup of its fd, with the size it has now. Only
    for reads (headers, batches, mtime); never closed as a segment (it shares the indexes)."""
    view = copy.copy(seg)
    view.fd = os.dup(seg.fd)
    return view


def inflate_bound(config) -> int:
    """How far the cleaner inflates one batch: what the log validator allowed when it was
    appended (max.message.bytes, perhaps lowered since), and never less than the clients' bound,
    so a lowered max.message.bytes cannot make a cleaned log unreadable to the cleaner."""
    return max(config.max_message_bytes, MAX_DECOMPRESSED_SIZE)


def _build_offset_map(
    segs, aborted: list, start: int, end: int, max_entries: int, bound: int
) -> tuple[dict, int]:
    """key -> last offset over segs[start:end], aborted transactions' records left out
    (aborted[k]: those with data in segs[k]); stops after the segment that fills the map.
    Returns the map and the index of the first segment it does not cover."""
    offset_map: dict[bytes, int] = {}
    txns = CleanedTransactions()
    for k in range(start, end):
        if len(offset_map) >= max_entries:
            return offset_map, k
        txns.add_aborted(aborted[k])
        for data, batches in read_batches(segs[k]):
            records = decode_records(data, max_decompressed=bound)
            r = 0
            for _, header in batches:
                batch_records = records[r : r + header.records_count]
                r += header.records_count
                if header.attributes & CONTROL_FLAG:
                    on_marker(txns, header, batch_records)
                    continue
                if txns.on_batch(header.producer_id, header.is_transactional, header.last_offset):
                    continue
                for record in batch_records:
                    key = record[2]
                    if key is not None:
                        offset_map[key] = record[0]
    return offset_map, end


def _aborted_in(log, k: int) -> list:
    """The aborted transactions with data in the log's k-th segment."""
    segs = log.segments
    upper = segs[k + 1].base_offset if k + 1 < len(segs) else segs[k].next_offset
    return log.collect_aborted_txns(segs[k].base_offset, upper)


def _group_segments(segs, max_bytes: int, max_index_bytes: int) -> list[list[LogSegment]]:
    """Consecutive runs whose total size (before cleaning) fits one segment: Kafka's
    groupSegmentsBySize, so that cleaning also merges the small segments it leaves behind."""
    groups, i = [], 0
    while i < len(segs):
        base = segs[i].base_offset
        size, index, time_index, j = 0, 0, 0, i
        while j < len(segs):
            s = segs[j]
            size += s.size
            index += len(s.offset_index) * OFFSET_ENTRY_SIZE
            time_index += (len(s.time_index) + 1) * TIME_ENTRY_SIZE  # + the entry seal() adds
            if j > i and (
                size > max_bytes
                or max(index, time_index) > max_index_bytes
                or s.next_offset - 1 - base > INT_MAX
            ):
                break
            j += 1
        groups.append(list(segs[i:j]))
        i = j
    return groups


def _first_timestamp(seg: LogSegment) -> int:
    for _, header in seg.headers():
        return header.max_timestamp
    return -1
