"""A partition's log, durability: the part of Log (a mixin) that owes fsyncs (flush.messages,
flush.ms, rolled segments) and the PendingFlush that another thread may run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kraft.fs import fsync_dir
from kraft.log.segment import LogSegment

if TYPE_CHECKING:
    from kraft.log.log import Log


class LogFlush:
    """Log's flushes; the attributes are Log's (log.py)."""

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, offset) and advance the
        recovery point to `offset` (default: the log end offset)."""
        pending = self._pending_flush(self.log_end_offset if offset is None else offset)
        pending.fsync()
        self.flushed(pending)

    def _pending_flush(self, offset: int) -> PendingFlush:
        offset = min(offset, self.log_end_offset)
        segments = []
        if offset > self.recovery_point:
            n = len(self._segments)
            for i, seg in enumerate(self._segments):
                upper = self._bases[i + 1] if i + 1 < n else None
                if (upper is None or upper > self.recovery_point) and seg.base_offset < offset:
                    seg.write_indexes()  # here: the fsync may run on another thread
                    segments.append(seg)
        directory = self.dir if self._dir_dirty else None
        self._dir_dirty = False
        return PendingFlush(self, offset, tuple(segments), directory)

    def flushed(self, pending: PendingFlush) -> None:
        """The recovery point moves once the fsyncs are done (never past a truncated end)."""
        self.recovery_point = max(self.recovery_point, min(pending.offset, self.log_end_offset))

    def _maybe_flush_after_append(self, now_ms: int | None) -> None:
        # Inline, as Kafka's append does: the append's caller (a produce answer, a follower's
        # next fetch, which acknowledges the offset to the leader) must come after this fsync,
        # and the callers are synchronous. Only topics that set flush.messages or flush.ms pay
        # it (both are off by default); the periodic flush and rolled segments go to a thread.
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
        elif now_ms is not None and self._flush_ms_due(now_ms):
            self.flush()

    def _flush_ms_due(self, now_ms: int) -> bool:
        """flush.ms has passed since the last timed flush with something unflushed: it counts
        as done from now (the caller flushes inline or hands the fsyncs to a thread)."""
        if (
            self.log_end_offset > self.recovery_point
            and now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self._last_flush_ms = now_ms
            return True
        return False

    def maybe_flush(self, now_ms: int) -> None:
        """flush.ms, and the fsync of segments rolled since the last call, all inline."""
        pending = self.due_flush(now_ms)
        if pending is not None:
            pending.fsync()
            self.flushed(pending)

    def due_flush(self, now_ms: int) -> PendingFlush | None:
        """What the periodic flush owes (flush.ms, segments rolled since the last call), for
        another thread to fsync as Kafka's background flusher does; then `flushed(it)`."""
        if self._flush_ms_due(now_ms):
            return self._pending_flush(self.log_end_offset)
        if self._roll_flush_offset > self.recovery_point:
            return self._pending_flush(self._roll_flush_offset)
        return None


@dataclass(frozen=True)
class PendingFlush:
    """fsyncs owed by one log: safe to run off the loop that appends (fsync of a file another
    thread appends to is fine; a segment deleted meanwhile needs no fsync any more)."""

    log: Log
    offset: int
    segments: tuple[LogSegment, ...]
    directory: Path | None

    def fsync(self) -> None:
        for seg in self.segments:
            try:
                seg.fsync()
            except OSError:
                if seg in self.log._segments:  # still the log's: a real disk error
                    raise
        if self.directory is not None:
            fsync_dir(self.directory)
