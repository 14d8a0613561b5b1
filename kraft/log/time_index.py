"""A segment's sparse time index (`.timeindex`): 12-byte entries of timestamp and relative offset,
big-endian; timestamps strictly increase, so lookups bisect an in-memory array."""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

from kraft.log.index_file import IndexFile

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size


class TimeIndex(IndexFile):
    """Entry (t, o): the largest timestamp in the segment up to offset o is t."""

    entry = ENTRY

    @property
    def timestamps(self):
        return self._columns[0]

    @property
    def offsets(self):
        return self._columns[1]

    @classmethod
    def load(
        cls,
        path: Path,
        base_offset: int,
        max_entries: int,
        rebuild: Callable[[], None] | None = None,
    ) -> TimeIndex:
        """Open an existing file (read lazily with `rebuild`: see IndexFile); raises
        IndexCorrupt or FileNotFoundError."""
        index = cls(path, base_offset, max_entries)
        index._open(0, rebuild)
        return index

    def _absolute(self, raw: tuple[int, int]) -> tuple[int, int]:
        return raw[0], self.base_offset + raw[1]

    def _problem(
        self, entry: tuple[int, int], before: tuple[int, int] | None, _limit: int
    ) -> str | None:
        last_ts, last_offset = before or (-(2**63), self.base_offset)
        if entry[0] <= last_ts or entry[1] < last_offset:
            return "out of order"
        return None

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, else (-1, base)."""
        i = bisect_right(self.timestamps, target_timestamp)
        if i == 0:
            return -1, self.base_offset
        return self.timestamps[i - 1], self.offsets[i - 1]

    def append(self, entries: list[tuple[int, int]]) -> None:
        """Add (timestamp, offset) entries; callers pass only growing timestamps."""
        if not entries:
            return
        self.timestamps.extend(t for t, _ in entries)
        self.offsets.extend(o for _, o in entries)
        base = self.base_offset
        self._write(b"".join(ENTRY.pack(t, o - base) for t, o in entries))

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        self._truncate(bisect_right(self.offsets, offset - 1))

    def reset(self) -> None:
        # Always cut the file: leftovers on disk may exist while nothing is loaded in memory.
        self._cut(0)
