"""Loading a partition directory at open: stray files removed, segments opened, and recovery
(CRC scan, torn tail cut, indexes rebuilt) for segments past the recovery point or with bad indexes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kraft.log import file_names
from kraft.log.cleaner_swap import complete_interrupted_swaps
from kraft.log.leader_epoch_cache import LeaderEpochCache
from kraft.log.log_config import LogConfig
from kraft.log.segment import LogSegment, SegmentCorrupt

_logger = logging.getLogger(__name__)


def remove_stray_files(dir: Path) -> list[int]:
    """Delete leftovers of interrupted writes and indexes without a .log; return the sorted base
    offsets of the segments present."""
    bases, index_files = [], []
    for entry in os.scandir(dir):
        name = entry.name
        if name.endswith(file_names.STRAY_SUFFIXES):
            os.unlink(entry.path)
            continue
        base = file_names.parse_base_offset(name, file_names.LOG_SUFFIX)
        if base is not None:
            bases.append(base)
        elif name.endswith(
            (file_names.INDEX_SUFFIX, file_names.TIME_INDEX_SUFFIX, file_names.TXN_INDEX_SUFFIX)
        ):
            index_files.append(entry)
    present = set(bases)
    for entry in index_files:
        stem = entry.name.rsplit(".", 1)[0]
        if not (len(stem) == 20 and stem.isdigit() and int(stem) in present):
            os.unlink(entry.path)
    return sorted(bases)


def load_segments(
    dir: Path,
    config: LogConfig,
    *,
    recovery_point: int,
    clean_shutdown: bool,
    trust_epochs: bool,
    epoch_cache: LeaderEpochCache,
    now_ms: int,
) -> tuple[list[LogSegment], int, int]:
    """Open every segment. After an unclean shutdown, segments that may hold offsets at or after
    `recovery_point` are CRC-scanned (those wholly below it were flushed: only their indexes and
    the bytes past their last index entry are read); so is any segment with a missing or invalid
    index, or every segment when the epoch checkpoint could not be trusted, or when
    `recovery_point` lies past every offset the log can hold (a checkpoint that does not describe
    this log). The first damaged segment is cut at the damage and every later segment is deleted,
    unless the damage lies below `recovery_point` (flushed, so not a torn write) or segments
    overlap: then SegmentCorrupt is raised, nothing is cut and no file is left open. Returns
    (segments, number of segments scanned, the recovery point used)."""
    complete_interrupted_swaps(dir)  # before the strays go: a .swap may be the only copy
    bases = remove_stray_files(dir)
    segments: list[LogSegment] = []
    try:
        for base in bases:
            segments.append(
                LogSegment(dir, base, config.index_interval_bytes, config.segment_index_bytes)
            )
        if not clean_shutdown and segments and recovery_point > segments[-1].base_offset:
            bound = _end_offset_bound(segments[-1])
            if recovery_point > bound:
                _logger.warning(
                    "%s: the recovery point %d in the checkpoint lies past the log's end (at most "
                    "%d); the checkpoint does not describe this log, so all of it is recovered",
                    dir,
                    recovery_point,
                    bound,
                )
                recovery_point = 0
        scanned = _load(
            segments,
            bases,
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
            trust_epochs=trust_epochs,
            epoch_cache=epoch_cache,
            now_ms=now_ms,
        )
        check_chain(segments)
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    return segments, scanned, recovery_point


def _end_offset_bound(seg: LogSegment) -> int:
    """The most a segment's bytes can hold: the next offset after the last batch header that
    reads, from its last index entry when the index loads (no CRC check: an upper bound)."""
    last = seg.offset_index.last_entry if seg.load_indexes(lazy=True) else None
    start = last[1] if last else 0
    end = seg.base_offset
    try:
        for _, header in seg.headers(start):
            end = header.next_offset
    except SegmentCorrupt:
        pass
    return end


def _load(
    segments: list[LogSegment],
    bases: list[int],
    *,
    recovery_point: int,
    clean_shutdown: bool,
    trust_epochs: bool,
    epoch_cache: LeaderEpochCache,
    now_ms: int,
) -> int:
    scanned = 0
    for i, seg in enumerate(segments):
        is_last = i == len(segments) - 1
        needs = not trust_epochs or (
            not clean_shutdown and (is_last or bases[i + 1] > recovery_point)
        )
        if not needs and seg.load_indexes(lazy=not is_last):
            try:
                seg.load_tail(now_ms)
                continue
            except SegmentCorrupt:
                pass
        min_offset = segments[i - 1].next_offset if i else 0
        epochs, truncated = seg.recover(min_offset, now_ms, protect_below=recovery_point)
        scanned += 1
        for epoch, start_offset in epochs:
            if epoch > epoch_cache.latest_epoch:
                epoch_cache.assign(epoch, start_offset, flush=False)
        if truncated and not is_last:
            for later in segments[i + 1 :]:
                later.delete()
            del segments[i + 1 :]
        if truncated:
            if seg.size == 0 and i > 0:
                # Nothing valid in it: the previous segment becomes the active one again.
                seg.delete()
                del segments[i]
            break
    for seg in segments[:-1]:
        seg.seal()
    if scanned:
        epoch_cache.flush()
    return scanned


def check_chain(segments: list[LogSegment]) -> None:
    """Raise SegmentCorrupt when a segment holds offsets at or past the next one's base offset
    (one of the two is damaged or misnamed)."""
    for seg, after in zip(segments, segments[1:]):
        if seg.next_offset > after.base_offset:
            raise SegmentCorrupt(
                f"{seg.log_path} holds offsets up to {seg.next_offset - 1}, past the base offset "
                f"of the next segment {after.log_path.name}: one of them is damaged or misnamed"
            )


def offset_gaps(segments: list[LogSegment]) -> list[tuple[int, int]]:
    """[(first missing offset, next offset present)] for each hole between or before a segment's
    batches: a missing segment file, or a first batch after the segment's own base offset. Only
    compaction makes such holes; in any other log they mean lost records."""
    gaps, expected = [], None
    for seg in segments:
        first = next(seg.headers(0), None) if seg.size else None
        start = seg.base_offset if first is None else first[1].base_offset
        if expected is not None and start > expected:
            gaps.append((expected, start))
        elif first is not None and start > seg.base_offset:
            gaps.append((seg.base_offset, start))
        expected = seg.next_offset
    return gaps
