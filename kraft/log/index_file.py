"""The file side both segment indexes share: fixed-size entries mirrored by two in-memory columns.
New entries reach the file at flush or close (one open, write, close), so an index holds no fd."""
from __future__ import annotations

import os
import struct
from array import array
from pathlib import Path

from kraft.fs import write_all


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
        # Entries not yet in the file. The file may lag the columns: an index is derived data,
        # and recovery (or the tail scan past its last entry) covers what a crash lost, as with
        # Kafka's mmap'd indexes. No fd is kept: one per index would triple a partition's fds
        # (the open-file limit caps them).
        self._pending: list[bytes] = []

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
        self.write_pending()
        for column in self._columns:
            del column[keep:]
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, keep * self.entry.size)
        finally:
            os.close(fd)

    def _write(self, data: bytes) -> None:
        """Entries just added to the columns, packed; they reach the file at flush or close."""
        self._pending.append(data)

    def write_pending(self) -> None:
        """Append the entries not yet in the file (on the thread that appends to the index)."""
        if not self._pending:
            return
        data, self._pending = b"".join(self._pending), []
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def fsync(self) -> None:
        """fsync the file as written so far (safe from another thread; none yet: nothing to do)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def flush(self) -> None:
        self.write_pending()
        self.fsync()

    def close(self) -> None:
        """Write pending entries (no fsync); no fd is held between calls."""
        self.write_pending()
