"""One segment: a `.log` file of whole v2 batches plus its offset and time indexes. Appends,
reads of whole-batch byte ranges, truncation, and the CRC-checking recovery scan."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

from clients.record.batch_header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
)
from clients.record.codec import decode_batch
from kraft.fs import write_all, writev_all
from kraft.log import file_names
from kraft.log.index_file import IndexCorrupt
from kraft.log.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kraft.log.offset_index import OffsetIndex
from kraft.log.segment_scan import (  # noqa: F401  (re-exported: callers import here)
    INT_MAX,
    SegmentCorrupt,
    SegmentScan,
)
from kraft.log.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kraft.log.time_index import TimeIndex
from kraft.log.transaction_index import TransactionIndex

SCAN_PROBE = 4096  # read_range reads this much per pread while batches are small
_LAST_OFFSET_DELTA_END = 27  # a header's bytes read_range needs: offsets and length

_logger = logging.getLogger(__name__)


class BatchInfo(NamedTuple):
    """What the segment needs of a batch being appended; `position` is within the caller's buffer."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    # The broker's stamp to write in place of the batch's first bytes (leader appends of a
    # producer's bytes, not copied to be stamped in place); None: write the batch as it is.
    stamp: bytes | None = None


class LogSegment(SegmentScan):
    def __init__(
        self,
        dir: Path,
        base_offset: int,
        index_interval_bytes: int,
        max_index_bytes: int,
        suffix: str = "",
    ) -> None:
        # `suffix` (".cleaned", ".swap") names a segment the log cleaner is still swapping in.
        self.dir = dir
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = _suffixed(file_names.log_file(dir, base_offset), suffix)
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(
            _suffixed(file_names.index_file(dir, base_offset), suffix),
            base_offset,
            max_index_bytes // OFFSET_ENTRY_SIZE,
        )
        self.time_index = TimeIndex(
            _suffixed(file_names.time_index_file(dir, base_offset), suffix),
            base_offset,
            max_index_bytes // TIME_ENTRY_SIZE,
        )
        self.txn_index = TransactionIndex.load(
            _suffixed(file_names.txn_index_file(dir, base_offset), suffix)
        )
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_last_index_entry = 0
        self.roll_base_ms: int | None = None  # when the first batch arrived; drives segment.ms

    @classmethod
    def create(
        cls,
        dir: Path,
        base_offset: int,
        index_interval_bytes: int,
        max_index_bytes: int,
        suffix: str = "",
    ) -> LogSegment:
        """A new empty segment (any leftover files with this base offset are emptied)."""
        seg = cls(dir, base_offset, index_interval_bytes, max_index_bytes, suffix)
        if seg.size:
            os.ftruncate(seg.fd, 0)
            seg.size = 0
        seg.offset_index.reset()
        seg.time_index.reset()
        seg.txn_index.delete()
        return seg

    def load_indexes(self, lazy: bool = False) -> bool:
        """Load both index files; False if either is missing or fails its sanity check. `lazy`
        (a sealed segment below the recovery point): only each file's size and last entry are
        checked now, the rest at the first lookup, which rebuilds them if they fail it."""
        rebuild = self._rebuild_indexes if lazy else None
        try:
            self.offset_index = OffsetIndex.load(
                self.offset_index.path,
                self.base_offset,
                self.offset_index.max_entries,
                self.size,
                rebuild,
            )
            self.time_index = TimeIndex.load(
                self.time_index.path, self.base_offset, self.time_index.max_entries, rebuild
            )
        except (FileNotFoundError, IndexCorrupt):
            return False
        return True

    def _rebuild_indexes(self) -> None:
        """A lazily read index failed its check: rebuild both from the log, as an open would
        have. The bytes lie below the recovery point, so damage in them raises SegmentCorrupt."""
        _logger.warning(
            "%s: an index of this segment is damaged; rebuilding both from the log", self.log_path
        )
        roll_base_ms = self.roll_base_ms
        self.recover(self.base_offset, 0, protect_below=self.next_offset)
        self.roll_base_ms = roll_base_ms
        self.seal()

    # -- writing ----------------------------------------------------------------------------
    def _track(
        self,
        position: int,
        size: int,
        last_offset: int,
        max_timestamp: int,
        index_entries: list,
        time_entries: list,
    ) -> None:
        """Kafka's indexing rule: an entry every index.interval.bytes, keyed by the batch's last
        offset and pointing at its start; a time entry when the max timestamp has grown."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            index_entries.append((last_offset, position))
            last = time_entries[-1][0] if time_entries else (self.time_index.last_entry or (-1,))[0]
            if self.max_timestamp > last:
                time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size

    def append(
        self, buf, start: int, end: int, batches: list[BatchInfo], now_ms: int | None
    ) -> None:
        """Write buf[start:end] (whole batches, described by `batches`) with one write; each
        batch's `stamp` replaces its first bytes."""
        file_pos = self.size
        try:
            if batches[0].stamp is None:
                write_all(self.fd, memoryview(buf)[start:end])
            else:
                view, parts = memoryview(buf), []
                for b in batches:
                    parts += (b.stamp, view[b.position + len(b.stamp) : b.position + b.size])
                writev_all(self.fd, parts)
        except OSError:
            os.ftruncate(self.fd, file_pos)  # never leave half a batch behind
            raise
        if self.roll_base_ms is None:
            first_ts = batches[0].max_timestamp
            self.roll_base_ms = now_ms if now_ms is not None else max(first_ts, 0)
        index_entries, time_entries = [], []
        shift = file_pos - start
        for batch in batches:
            self._track(
                batch.position + shift,
                batch.size,
                batch.last_offset,
                batch.max_timestamp,
                index_entries,
                time_entries,
            )
        self.offset_index.append(index_entries)
        self.time_index.append(time_entries)
        self.size = file_pos + end - start
        self.next_offset = batches[-1].last_offset + 1

    def seal(self, *, fsync: bool = True) -> None:
        """The segment stops being active: record its final max timestamp (so retention and
        reopen find it in the time index) and close the index append handles. `fsync=False`:
        the caller owes this segment a later fsync (a roll: the flusher's, in a thread)."""
        last = self.time_index.last_entry
        if self.max_timestamp >= 0 and (last is None or self.max_timestamp > last[0]):
            self.time_index.append([(self.max_timestamp, self.offset_of_max_timestamp)])
            if fsync:
                self.time_index.flush()
        self.offset_index.close()
        self.time_index.close()

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= `offset`; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        pos, header = found
        removed = self.size - pos
        self.offset_index.truncate_to_position(pos)
        self.time_index.truncate_to_offset(header.base_offset)
        os.ftruncate(self.fd, pos)
        self.size = pos
        self.txn_index.truncate_to(header.base_offset)
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        roll_base_ms = self.roll_base_ms
        self.load_tail(0)
        self.roll_base_ms = roll_base_ms if self.size else None
        return removed

    # -- reading ----------------------------------------------------------------------------
    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset is >= `offset`. Raises
        SegmentCorrupt when the batch an index entry points at, or any batch scanned, does not
        hold the offsets the index and the segment say it does."""
        indexed, start = self.offset_index.lookup(offset)
        for pos, header in self.headers(start):
            if (
                pos == start and start and header.last_offset != indexed
            ) or header.last_offset >= self.next_offset:
                raise SegmentCorrupt(
                    f"{self.log_path}: the batch at position {pos} claims offsets "
                    f"{header.base_offset} to {header.last_offset}; the segment holds offsets below "
                    f"{self.next_offset}"
                    + (
                        f" and its index says {indexed} ends there"
                        if pos == start and start
                        else ""
                    )
                    + ": its baseOffset is damaged"
                )
            if header.last_offset >= offset:
                return pos, header
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> bytes | None:
        """Whole batches from the one containing `start_offset`; None if this segment holds no
        batch at or after it. One pread of the range `read_range` finds."""
        found = self.read_range(start_offset, max_bytes, max_offset, min_one_batch)
        if found is None:
            return None
        pos, size, _ = found
        return os.pread(self.fd, size, pos) if size else b""

    def read_range(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[int, int, int] | None:
        """(position, size, base offset of the first batch) of the whole batches a read from
        `start_offset` returns; None if this segment holds no batch at or after it. Walks the
        headers only, so a fetch can read the bytes once, straight into its response."""
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        pos, first = found
        if max_offset is not None and first.last_offset >= max_offset:
            return pos, 0, first.base_offset
        limit = pos + min(max(max_bytes, 0), self.size - pos)
        end, floor = pos, first.base_offset
        chunk, chunk_pos, probe = b"", pos, SCAN_PROBE
        while end + HEADER_SIZE <= limit:
            rel = end - chunk_pos
            if rel + _LAST_OFFSET_DELTA_END > len(chunk):
                chunk, chunk_pos, rel = os.pread(self.fd, probe, end), end, 0
                if len(chunk) < _LAST_OFFSET_DELTA_END:
                    break
            size = LOG_OVERHEAD + int.from_bytes(chunk[rel + 8 : rel + 12], "big")
            if end + size > limit:
                break
            base = int.from_bytes(chunk[rel : rel + 8], "big", signed=True)
            last = base + int.from_bytes(chunk[rel + 23 : rel + 27], "big", signed=True)
            # Never hand out a batch whose offsets break the order (a damaged baseOffset).
            self._check_offsets(end, base, last, floor, self.next_offset)
            if max_offset is not None and last >= max_offset:
                break
            floor = last + 1
            end += size
            # Big batches: read just the next header, not bytes the fetch reads again anyway.
            probe = _LAST_OFFSET_DELTA_END if size > SCAN_PROBE else SCAN_PROBE
        if end == pos:
            return pos, first.size if min_one_batch else 0, first.base_offset
        return pos, end - pos, first.base_offset

    def find_by_timestamp(self, timestamp: int, min_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at/after `min_offset` whose timestamp is
        >= `timestamp`. As Kafka: the indexes and headers find the first batch whose max
        timestamp qualifies, then that batch's records are scanned for the record itself."""
        _, offset = self.time_index.lookup(timestamp)
        _, start = self.offset_index.lookup(max(offset, min_offset))
        for pos, header in self.headers(start):
            if header.last_offset >= min_offset and header.max_timestamp >= timestamp:
                try:
                    _, records = decode_batch(os.pread(self.fd, header.size, pos), verify_crc=False)
                except CorruptBatchError:  # appends were validated: the file changed since
                    return max(header.base_offset, min_offset), header.max_timestamp
                for record in records:
                    if record.offset >= min_offset and record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    # -- lifecycle --------------------------------------------------------------------------
    def last_modified_ms(self) -> int:
        return int(os.fstat(self.fd).st_mtime * 1000)

    def flush(self) -> None:
        self.write_indexes()
        self.fsync()

    def write_indexes(self) -> None:
        """Index entries not yet in their files go there (no fsync)."""
        self.offset_index.write_pending()
        self.time_index.write_pending()

    def fsync(self) -> None:
        """fsync the log and the index files as written so far: safe from a flusher thread
        while appends go on (write_indexes first, on the appending thread)."""
        os.fsync(self.fd)
        self.offset_index.fsync()
        self.time_index.fsync()
        self.txn_index.fsync()

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        os.close(self.fd)

    def change_suffix(self, old: str, new: str) -> None:
        """Rename the segment's files from suffix `old` to `new` (open fds stay valid). The .log goes
        last, so the cleaner can treat its rename as the step's commit point."""
        for owner, attr in (
            (self.offset_index, "path"),
            (self.time_index, "path"),
            (self.txn_index, "path"),
            (self, "log_path"),
        ):
            path = getattr(owner, attr)
            renamed = Path(str(path)[: len(str(path)) - len(old)] + new)
            if owner is self or path.exists():  # an index file appears only when first written
                os.replace(path, renamed)
            setattr(owner, attr, renamed)

    def delete(self) -> None:
        """Close and unlink; the .log goes first so a crash leaves only orphan indexes."""
        self.close()
        for path in (
            self.log_path,
            self.offset_index.path,
            self.time_index.path,
            self.txn_index.path,
        ):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _suffixed(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix) if suffix else path
