"""A segment's sparse offset index (`.index`): 8-byte entries of relative offset and file position,
big-endian, kept in memory as arrays for bisect and appended to the file as written."""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

from kraft.log.index_file import IndexFile

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex(IndexFile):
    """Entries map a batch's last offset to the file position where that batch starts; offsets
    strictly increase, so a lookup is one bisect."""

    entry = ENTRY

    @property
    def offsets(self):  # absolute offsets
        return self._columns[0]

    @property
    def positions(self):  # file positions
        return self._columns[1]

    @classmethod
    def load(
        cls,
        path: Path,
        base_offset: int,
        max_entries: int,
        log_size: int,
        rebuild: Callable[[], None] | None = None,
    ) -> OffsetIndex:
        """Open an existing file, checked against the log's size (read lazily with `rebuild`:
        see IndexFile); raises IndexCorrupt or FileNotFoundError."""
        index = cls(path, base_offset, max_entries)
        index._open(log_size, rebuild)
        return index

    def _absolute(self, raw: tuple[int, int]) -> tuple[int, int]:
        return self.base_offset + raw[0], raw[1]

    def _problem(
        self, entry: tuple[int, int], before: tuple[int, int] | None, log_size: int
    ) -> str | None:
        last_offset, last_position = before or (self.base_offset - 1, -1)
        offset, position = entry
        if offset <= last_offset or position <= last_position or position >= log_size:
            return f"out of order or past the log end {log_size}"
        return None

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, else (base, 0)."""
        i = bisect_right(self.offsets, target_offset)
        if i == 0:
            return self.base_offset, 0
        return self.offsets[i - 1], self.positions[i - 1]

    def append(self, entries: list[tuple[int, int]]) -> None:
        """Add (offset, position) entries, in order, with one write."""
        if not entries:
            return
        self.offsets.extend(offset for offset, _ in entries)
        self.positions.extend(position for _, position in entries)
        base = self.base_offset
        self._write(b"".join(ENTRY.pack(o - base, p) for o, p in entries))

    def truncate_to_position(self, log_size: int) -> None:
        """Drop entries pointing at or past `log_size` (the log was cut there)."""
        keep = bisect_right(self.positions, log_size - 1)
        self._truncate(keep)

    def reset(self) -> None:
        # Always cut the file: leftovers on disk may exist while nothing is loaded in memory.
        self._cut(0)
