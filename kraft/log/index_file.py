"""The file side both segment indexes share: fixed-size entries mirrored by two in-memory columns,
appended through a write-only fd that is opened on the first write and closed with the segment."""
from __future__ import annotations

import os
import struct
from array import array
from pathlib import Path


class IndexCorrupt(ValueError):
    """The index file fails its sanity check and must be rebuilt from the log."""


class IndexFile:
    """Base of OffsetIndex and TimeIndex: `_columns` holds the two fields of every entry (the
    subclasses name them), the file holds the same entries packed with the subclass's `entry`."""

    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._columns = (array("q"), array("q"))
        self._fd: int | None = None   # opened for appends only while the segment is active

    @classmethod
    def _read_entries(cls, path: Path):
        """The unpacked entries of an existing file; raises IndexCorrupt or FileNotFoundError."""
        data = path.read_bytes()
        if len(data) % cls.entry.size:
            raise IndexCorrupt(f"{path}: size {len(data)} is not a multiple of {cls.entry.size}")
        return cls.entry.iter_unpack(data)

    def __len__(self) -> int:
        return len(self._columns[0])

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def _truncate(self, keep: int) -> None:
        """Keep the first `keep` entries; a no-op (no fd opened) when none would be dropped."""
        if keep >= len(self) and self.path.exists():
            return
        self._cut(keep)

    def _cut(self, keep: int) -> None:
        """Keep the first `keep` entries in memory and cut the file to as many."""
        for column in self._columns:
            del column[keep:]
        os.truncate(self._open(), keep * self.entry.size)

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
