"""Loading a partition directory at open: stray files removed, segments opened, and recovery
(CRC scan, torn tail cut, indexes rebuilt) for segments past the recovery point or with bad indexes."""
from __future__ import annotations

import os
from pathlib import Path

from kraft.log import file_names
from kraft.log.cleaner_swap import complete_interrupted_swaps
from kraft.log.leader_epoch_cache import LeaderEpochCache
from kraft.log.log_config import LogConfig
from kraft.log.segment import LogSegment, SegmentCorrupt


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
        elif name.endswith((file_names.INDEX_SUFFIX, file_names.TIME_INDEX_SUFFIX)):
            index_files.append(entry)
    present = set(bases)
    for entry in index_files:
        stem = entry.name.rsplit(".", 1)[0]
        if not (len(stem) == 20 and stem.isdigit() and int(stem) in present):
            os.unlink(entry.path)
    return sorted(bases)


def load_segments(dir: Path, config: LogConfig, *, recovery_point: int, clean_shutdown: bool,
                  trust_epochs: bool, epoch_cache: LeaderEpochCache,
                  now_ms: int) -> tuple[list[LogSegment], int]:
    """Open every segment. After an unclean shutdown, segments that may hold offsets at or after
    `recovery_point` are CRC-scanned; so is any segment with a missing or invalid index, or every
    segment when the epoch checkpoint could not be trusted. The first damaged segment is cut at the
    damage and every later segment is deleted. Returns (segments, number of segments scanned)."""
    complete_interrupted_swaps(dir)     # before the strays go: a .swap may be the only copy
    bases = remove_stray_files(dir)
    segments = [LogSegment(dir, base, config.index_interval_bytes, config.segment_index_bytes)
                for base in bases]
    scanned = 0
    for i, seg in enumerate(segments):
        is_last = i == len(segments) - 1
        needs = not trust_epochs or (not clean_shutdown and (is_last or bases[i + 1] > recovery_point))
        if not needs and seg.load_indexes():
            try:
                seg.load_tail(now_ms)
                continue
            except SegmentCorrupt:
                pass
        min_offset = segments[i - 1].next_offset if i else 0
        epochs, truncated = seg.recover(min_offset, now_ms)
        scanned += 1
        for epoch, start_offset in epochs:
            if epoch > epoch_cache.latest_epoch:
                epoch_cache.assign(epoch, start_offset, flush=False)
        if truncated and not is_last:
            for later in segments[i + 1:]:
                later.delete()
            del segments[i + 1:]
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
    return segments, scanned
