"""A segment's sparse time index (`.timeindex`): 12-byte entries of timestamp and relative offset,
big-endian; timestamps strictly increase, so lookups bisect an in-memory array."""
from __future__ import annotations

import struct
from bisect import bisect_right
from pathlib import Path

from kraft.log.index_file import IndexCorrupt, IndexFile

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size


class TimeIndex(IndexFile):
    """Entry (t, o): the largest timestamp in the segment up to offset o is t."""

    entry = ENTRY

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)
        self.timestamps, self.offsets = self._columns

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int) -> TimeIndex:
        index = cls(path, base_offset, max_entries)
        last_ts, last_offset = -(2**63), base_offset
        for timestamp, relative in cls._read_entries(path):
            offset = base_offset + relative
            if timestamp <= last_ts or offset < last_offset:
                raise IndexCorrupt(f"{path}: entry ({timestamp}, {offset}) out of order")
            index.timestamps.append(timestamp)
            index.offsets.append(offset)
            last_ts, last_offset = timestamp, offset
        return index

    @property
    def last_entry(self) -> tuple[int, int] | None:
        if not self.timestamps:
            return None
        return self.timestamps[-1], self.offsets[-1]

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
