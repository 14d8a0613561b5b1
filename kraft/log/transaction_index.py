"""A segment's `.txnindex` (Kafka's TransactionIndex): the aborted transactions whose ABORT marker
lies in the segment, so a read_committed fetch can list the aborted data in the range it returns.

Layout, Kafka's AbortedTxn, one fixed 34-byte big-endian entry per aborted transaction:
version int16 (0), producerId int64, firstOffset int64 (the transaction's first data offset),
lastOffset int64 (the ABORT marker's offset), lastStableOffset int64 (the LSO once it completed).
Entries are appended in marker order; the file appears only with its first entry. The entries
are few (one per abort), so they are also kept in memory.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.entries: list[AbortedTxn] = []
        self._dirty = False  # appended since the last fsync

    @classmethod
    def load(cls, path: Path) -> TransactionIndex:
        """The entries in `path` (none if it does not exist). A torn last entry (a crash in its
        write) is cut off; an entry of an unknown version stops the read there."""
        index = cls(path)
        try:
            data = index.path.read_bytes()
        except FileNotFoundError:
            return index
        whole = len(data) - len(data) % ENTRY_SIZE
        for pos in range(0, whole, ENTRY_SIZE):
            version, *fields = _ENTRY.unpack_from(data, pos)
            if version != VERSION:
                whole = pos
                break
            index.entries.append(AbortedTxn(*fields))
        if whole != len(data):
            index._rewrite()
        return index

    @property
    def last_offset(self) -> int:
        return self.entries[-1].last_offset if self.entries else -1

    def append(self, txn: AbortedTxn) -> bool:
        """Add `txn` unless its marker is not past the last one indexed: replaying the log after
        a restart meets the same markers again. Returns whether it was written."""
        if txn.last_offset <= self.last_offset:
            return False
        with open(self.path, "ab") as f:
            f.write(_ENTRY.pack(VERSION, *txn))
        self.entries.append(txn)
        self._dirty = True
        return True

    def create_empty(self) -> None:
        """Make the file exist with no entry (fsynced with the segment): a cleaned segment that
        replaces one with entries carries it through the swap, so that recovery from a crash
        in the swap never keeps the replaced segment's entries (cleaner_swap.py)."""
        open(self.path, "ab").close()
        self._dirty = True

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """(the aborted transactions overlapping [fetch_offset, upper_bound), whether the search
        can stop here): Kafka's rule, an entry whose last stable offset reaches `upper_bound`
        proves no later segment holds a transaction that began below it."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset` (the log lost that tail)."""
        kept = [t for t in self.entries if t.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def _rewrite(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(_ENTRY.pack(VERSION, *t) for t in self.entries))
        os.replace(tmp, self.path)
        self._dirty = True

    def fsync(self) -> None:
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self.entries = []
