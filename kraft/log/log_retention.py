"""A partition's log, truncation and retention: the part of Log (a mixin) that drops batches from
the end (a follower's truncation) or whole segments from the start (retention, DeleteRecords)."""

from __future__ import annotations

from kraft.log.log_validator import OffsetOutOfRange
from kraft.log.segment import LogSegment


class LogRetention:
    """Log's truncation and retention; the attributes are Log's (log.py)."""

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after `offset` (a batch containing it goes whole)."""
        if offset >= self.log_end_offset:
            return
        if offset <= self._bases[0]:
            self.truncate_fully_and_start_at(offset)
            return
        self.segments_generation += 1
        while self._bases[-1] >= offset:
            self._segments.pop().delete()
            self._bases.pop()
            self._dir_dirty = True
        self._segments[-1].truncate_to(offset)
        self._after_truncation()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.segments_generation += 1
        for seg in self._segments:
            seg.delete()
        self._segments = [
            LogSegment.create(
                self.dir, offset, self.config.index_interval_bytes, self.config.segment_index_bytes
            )
        ]
        self._bases = [offset]
        self._dir_dirty = True
        self.log_start_offset = offset
        self.leader_epoch_cache.clear()
        self._after_truncation()
        self._high_watermark = offset

    def _after_truncation(self) -> None:
        self.log_end_offset = self._segments[-1].next_offset
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        lowered = self.log_end_offset < self.recovery_point
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._roll_flush_offset = min(self._roll_flush_offset, self.log_end_offset)
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        if lowered and self.on_recovery_point_lowered is not None:
            self.on_recovery_point_lowered(self)

    def maybe_increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: move the log start up to `offset` (at most the HW); whole segments below
        it go at the next delete_old_segments."""
        if offset > self._high_watermark:
            raise OffsetOutOfRange(
                f"cannot move the log start of {self._name()} to {offset}: "
                f"beyond the high watermark {self._high_watermark}"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.leader_epoch_cache.truncate_from_start(offset)

    def delete_old_segments(self, now_ms: int) -> int:
        """Retention (if cleanup.policy has 'delete') plus segments below the log start offset.
        Only segments wholly below the HW and never the active one."""
        deleted = 0
        if self.config.delete:
            if self.config.retention_ms >= 0:
                limit = now_ms - self.config.retention_ms
                deleted += self._delete_oldest_while(lambda seg: largest_timestamp(seg) < limit)
            if self.config.retention_bytes >= 0:
                excess = [self.size_in_bytes() - self.config.retention_bytes]

                def over(seg: LogSegment) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False

                deleted += self._delete_oldest_while(over)
        start = self.log_start_offset
        deleted += self._delete_oldest_while(lambda seg: True, upper_bound=start)
        return deleted

    def _delete_oldest_while(self, predicate, upper_bound: int | None = None) -> int:
        limit = (
            self._high_watermark if upper_bound is None else min(upper_bound, self._high_watermark)
        )
        count = 0
        while len(self._segments) > 1 and self._bases[1] <= limit and predicate(self._segments[0]):
            self._segments.pop(0).delete()
            self._bases.pop(0)
            count += 1
        if count:
            self._dir_dirty = True
            self.segments_generation += 1
            if self._bases[0] > self.log_start_offset:
                self.log_start_offset = self._bases[0]
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
            self.recovery_point = max(self.recovery_point, self.log_start_offset)
        return count

    def replace_segments(self, first: int, count: int, new: LogSegment) -> None:
        """The cleaner's swap (cleaner_swap.py): `new` replaces segments[first:first + count]."""
        self._segments[first : first + count], self._bases[first : first + count] = (
            [new],
            [new.base_offset],
        )
        self.segments_generation += 1


def largest_timestamp(seg: LogSegment) -> int:
    # Kafka falls back to the file's mtime when no batch carries a timestamp.
    return seg.max_timestamp if seg.max_timestamp >= 0 else seg.last_modified_ms()
