"""LogManager's compaction (a mixin): Kafka's log cleaner over every compacted log, as disk steps
run inline or off the loop, with the cleaner-offset-checkpoint of each dir it cleaned."""

from __future__ import annotations

import functools
import logging

from clients.record.batch_header import CorruptBatchError
from kraft.log import file_names as fn
from kraft.log.checkpoint import write_offset_checkpoint
from kraft.log.cleaner import DEFAULT_MAX_MAP_ENTRIES, CleanResult, cleaning_steps, plan_cleaning
from kraft.log.disk_steps import Steps, run_inline, run_off_loop
from kraft.log.segment import SegmentCorrupt

# LogManager's logger: these warnings went out under its name before this file split off.
_logger = logging.getLogger("kraft.log.log_manager")


class LogManagerCleaning:
    """LogManager's cleaner; the attributes are LogManager's (log_manager.py)."""

    def clean_compacted(
        self,
        now_ms: int,
        *,
        max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
    ) -> dict[tuple[str, int], CleanResult]:
        """Kafka's log cleaner, all inline (tests, tools): see cleaning_steps."""
        return run_inline(self.cleaning_steps(now_ms, max_map_entries=max_map_entries))

    async def clean_compacted_off_loop(
        self,
        now_ms: int,
        run_sync,
        *,
        max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
    ) -> dict[tuple[str, int], CleanResult]:
        """The broker's cleaner: the reads, writes and fsyncs run through `run_sync`
        (trio.to_thread.run_sync) while appends go on; plans, swaps and offsets stay on the loop."""
        return await run_off_loop(
            self.cleaning_steps(now_ms, max_map_entries=max_map_entries), run_sync
        )

    def cleaning_steps(
        self, now_ms: int, *, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES
    ) -> Steps:
        """Kafka's log cleaner as disk steps (disk_steps.py); call periodically
        (log.cleaner.backoff.ms). Every compacted log whose dirty part is due
        (min.cleanable.dirty.ratio, or max.compaction.lag.ms) is cleaned, dirtiest first;
        cleaner-offset-checkpoint records how far. A log whose segments changed during its pass
        (truncation, retention, going offline) is left for the next round."""
        self._now_ms = now_ms
        due = []
        for tp, log in self._logs.items():
            if log.config.compact:
                plan = plan_cleaning(
                    log, self._cleaner_offsets.get(tp, 0), now_ms, self.first_unstable_offset(*tp)
                )
                if plan is not None and plan.due(log.config.min_cleanable_dirty_ratio):
                    due.append((plan.dirty_ratio, tp, plan))
        results, dirs = {}, set()
        for _, tp, plan in sorted(due, key=lambda item: -item[0]):
            log = self._logs.get(tp)
            if log is None:
                continue  # went offline while an earlier log was cleaned
            # The loop ran while earlier logs were cleaned: plan again from where this one is.
            plan = plan_cleaning(
                log, self._cleaner_offsets.get(tp, 0), now_ms, self.first_unstable_offset(*tp)
            )
            if plan is None:
                continue
            generation = log.segments_generation
            try:
                result = yield from cleaning_steps(
                    log, plan, now_ms, max_map_entries=max_map_entries
                )
            except (CorruptBatchError, OSError, SegmentCorrupt) as exc:
                if self._logs.get(tp) is not log or log.segments_generation != generation:
                    continue  # read or written while the log changed: not a fault of its files
                if isinstance(exc, CorruptBatchError):
                    # Kafka marks such a log uncleanable; we retry later.
                    _logger.warning("cannot compact %s-%s: %s", tp[0], tp[1], exc)
                else:
                    self.log_failed(tp[0], tp[1], exc, "compacting")
                continue
            if result is None or self._logs.get(tp) is not log:
                continue
            self._cleaner_offsets[tp] = result.end_offset
            dirs.add(self._dir_of[tp])
            results[tp] = result
        for log_dir in dirs:
            offsets = {
                tp: offset
                for tp, offset in self._cleaner_offsets.items()
                if self._dir_of.get(tp) == log_dir
            }
            # One writer (this pass) writes the file, crash-safely: rounds never interleave.
            try:
                yield functools.partial(
                    write_offset_checkpoint, log_dir / fn.CLEANER_OFFSET_CHECKPOINT, offsets
                )
            except OSError as exc:
                self.dir_failed(log_dir, exc, "writing its cleaner checkpoint")
        return results
