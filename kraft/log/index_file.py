"""The file side both segment indexes share: fixed-size entries mirrored by two in-memory columns.
New entries reach the file at flush or close (one open, write, close), so an index holds no fd."""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kraft.fs import write_all


class IndexCorrupt(ValueError):
    """The index file fails its sanity check and must be rebuilt from the log."""


class _Deferred(NamedTuple):
    count: int
    last: tuple[int, int] | None
    limit: int  # what entries are checked against (the log's size)
    rebuild: Callable[[], None]


class IndexFile:
    """Base of OffsetIndex and TimeIndex: `_columns` holds the two fields of every entry (the
    subclasses name them), the file holds the same entries packed with the subclass's `entry`.

    An index opened with `rebuild` is read lazily, as Kafka's LazyIndex: at open only the file's
    size and last entry are checked (a restart then costs nothing per retained byte); every
    entry is read and checked at the first lookup, and `rebuild` (the segment's) runs instead
    when that check fails."""

    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._loaded = (array("q"), array("q"))
        # Entries not yet in the file. The file may lag the columns: an index is derived data,
        # and recovery (or the tail scan past its last entry) covers what a crash lost, as with
        # Kafka's mmap'd indexes. No fd is kept: one per index would triple a partition's fds
        # (the open-file limit caps them).
        self._pending: list[bytes] = []
        self._deferred: _Deferred | None = None  # opened lazily, entries not read yet

    # What the subclass says about its entries: absolute values, and what is wrong with one.
    def _absolute(self, raw: tuple[int, int]) -> tuple[int, int]:
        raise NotImplementedError

    def _problem(
        self, entry: tuple[int, int], before: tuple[int, int] | None, limit: int
    ) -> str | None:
        raise NotImplementedError

    @property
    def _columns(self) -> tuple[array, array]:
        if self._deferred is not None:
            self._read_deferred()
        return self._loaded

    def _open(self, limit: int, rebuild: Callable[[], None] | None) -> None:
        """Read the file (raises IndexCorrupt or FileNotFoundError), or with `rebuild` only
        check its size and last entry and read the rest at first use."""
        if rebuild is None:
            self._fill(limit)
            return
        size = os.stat(self.path).st_size
        if size % self.entry.size:
            raise IndexCorrupt(f"{self.path}: size {size} is not a multiple of {self.entry.size}")
        last = None
        if size:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                raw = os.pread(fd, self.entry.size, size - self.entry.size)
            finally:
                os.close(fd)
            last = self._checked(self.entry.unpack(raw), None, limit)
        self._deferred = _Deferred(size // self.entry.size, last, limit, rebuild)

    def _fill(self, limit: int) -> None:
        """Every entry of the file into the columns, each checked against the one before."""
        data = self.path.read_bytes()
        if len(data) % self.entry.size:
            raise IndexCorrupt(
                f"{self.path}: size {len(data)} is not a multiple of {self.entry.size}"
            )
        first, second = self._loaded
        before = None
        for raw in self.entry.iter_unpack(data):
            before = self._checked(raw, before, limit)
            first.append(before[0])
            second.append(before[1])

    def _checked(
        self, raw: tuple[int, int], before: tuple[int, int] | None, limit: int
    ) -> tuple[int, int]:
        entry = self._absolute(raw)
        problem = self._problem(entry, before, limit)
        if problem is not None:
            raise IndexCorrupt(f"{self.path}: entry {entry} {problem}")
        return entry

    def _read_deferred(self) -> None:
        deferred, self._deferred = self._deferred, None
        try:
            self._fill(deferred.limit)
        except (IndexCorrupt, FileNotFoundError):
            for column in self._loaded:
                del column[:]
            deferred.rebuild()

    def __len__(self) -> int:
        if self._deferred is not None:
            return self._deferred.count
        return len(self._loaded[0])

    @property
    def last_entry(self) -> tuple[int, int] | None:
        if self._deferred is not None:
            return self._deferred.last
        first, second = self._loaded
        return (first[-1], second[-1]) if first else None

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
        if keep == 0:
            self._deferred = None  # nothing kept: nothing to read first
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
