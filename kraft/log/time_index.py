"""A segment's sparse time index (`.timeindex`): 12-byte entries of timestamp and relative offset,
big-endian; timestamps strictly increase, so lookups bisect an in-memory array."""
from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

from kraft.fs import write_all
from kraft.log.offset_index import IndexCorrupt

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size


class TimeIndex:
    """Entry (t, o): the largest timestamp in the segment up to offset o is t."""

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self.timestamps = array("q")
        self.offsets = array("q")
        self._fd: int | None = None

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int) -> TimeIndex:
        index = cls(path, base_offset, max_entries)
        data = path.read_bytes()
        if len(data) % ENTRY_SIZE:
            raise IndexCorrupt(f"{path}: size {len(data)} is not a multiple of {ENTRY_SIZE}")
        last_ts, last_offset = -(2**63), base_offset
        for timestamp, relative in ENTRY.iter_unpack(data):
            offset = base_offset + relative
            if timestamp <= last_ts or offset < last_offset:
                raise IndexCorrupt(f"{path}: entry ({timestamp}, {offset}) out of order")
            index.timestamps.append(timestamp)
            index.offsets.append(offset)
            last_ts, last_offset = timestamp, offset
        return index

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def is_full(self) -> bool:
        return len(self.timestamps) >= self.max_entries

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
        write_all(self._open(), b"".join(ENTRY.pack(t, o - base) for t, o in entries))

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        keep = bisect_right(self.offsets, offset - 1)
        if keep >= len(self.offsets) and self.path.exists():
            return
        del self.timestamps[keep:]
        del self.offsets[keep:]
        os.truncate(self._open(), keep * ENTRY_SIZE)

    def reset(self) -> None:
        del self.timestamps[:]
        del self.offsets[:]
        os.truncate(self._open(), 0)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
