"""LogSegment's scans of its own file (a mixin): header-only walks, the tail load after the last
index entry, and the CRC-checking recovery that rebuilds the indexes and cuts a torn tail."""

from __future__ import annotations

import os

from clients.record.batch_header import (
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    validate_batch,
)

INT_MAX = 2**31 - 1
SCAN_CHUNK = 16384  # header scans read this much per pread
RECOVERY_CHUNK = 8 * 1024 * 1024
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD


class SegmentCorrupt(ValueError):
    """A segment's bytes disagree with themselves or with the log: a header scan not ending on a
    batch boundary (a torn tail: recovery cuts it), or offsets out of order, outside the segment
    or missing from the log (damage: the replica must not serve it)."""


class SegmentScan:
    """LogSegment's scans; the attributes (fd, size, base_offset, the indexes) are its own."""

    def headers(self, pos: int = 0):
        """Yield (position, BatchHeader) from `pos` to the end, reading headers only. Stops before
        a batch whose header is incomplete; the caller compares the end with `size`. Raises
        SegmentCorrupt on a header no batch of this segment can have: too short, or offsets going
        backwards or outside the segment (the CRC does not cover baseOffset: this is its check)."""
        end, floor = self.size, self.base_offset
        chunk, chunk_pos = b"", pos
        while pos + HEADER_SIZE <= end:
            rel = pos - chunk_pos
            if rel < 0 or rel + HEADER_SIZE > len(chunk):
                chunk, chunk_pos, rel = os.pread(self.fd, SCAN_CHUNK, pos), pos, 0
                if len(chunk) < HEADER_SIZE:
                    return
            header = BatchHeader._make(HEADER.unpack_from(chunk, rel))
            if header.batch_length < _MIN_BATCH_LENGTH:
                raise SegmentCorrupt(
                    f"{self.log_path}: batch length {header.batch_length} at {pos}"
                )
            self._check_offsets(pos, header.base_offset, header.last_offset, floor)
            yield pos, header
            floor = header.next_offset
            pos += LOG_OVERHEAD + header.batch_length

    def _check_offsets(
        self, pos: int, base_offset: int, last_offset: int, floor: int, ceiling: int | None = None
    ) -> None:
        """Raise SegmentCorrupt unless floor <= base_offset <= last_offset < ceiling (and the
        relative offset fits the index)."""
        if (
            base_offset < floor
            or last_offset < base_offset
            or last_offset - self.base_offset > INT_MAX
            or (ceiling is not None and last_offset >= ceiling)
        ):
            raise SegmentCorrupt(
                f"{self.log_path}: the batch at position {pos} claims offsets {base_offset} to "
                f"{last_offset}, but there this segment holds offsets from {floor}"
                + (f" below {ceiling}" if ceiling is not None else "")
                + ": its baseOffset is damaged"
            )

    def load_tail(self, now_ms: int) -> None:
        """Set next offset, max timestamp and index state from the indexes plus a header scan of
        the bytes after the last index entry. Raises SegmentCorrupt on a torn tail."""
        last_ts = self.time_index.last_entry
        if last_ts is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_ts
        last = self.offset_index.last_entry
        start = last[1] if last else 0
        pos, next_offset = start, self.base_offset
        if start:
            next_offset = last[0] + 1
        for pos, header in self.headers(start):
            next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = (
                    header.max_timestamp,
                    header.last_offset,
                )
            pos += header.size
        if pos != self.size:
            raise SegmentCorrupt(
                f"{self.log_path}: header scan ended at {pos}, file size {self.size}"
            )
        self.next_offset = next_offset
        self.bytes_since_last_index_entry = self.size - start
        self.roll_base_ms = None
        if self.size:
            first = next(self.headers(0))[1]
            self.roll_base_ms = first.max_timestamp if first.max_timestamp >= 0 else now_ms

    def recover(
        self, min_offset: int, now_ms: int, protect_below: int = 0
    ) -> tuple[list[tuple[int, int]], int]:
        """Check every batch (length, magic, CRC, offsets increasing from `min_offset`), rebuild both
        indexes, and cut the file at the first bad byte. Returns ([(epoch, base_offset)] of the
        valid batches, bytes truncated). Damage before offset `protect_below` (flushed data: disk
        damage, not a torn write) raises SegmentCorrupt and cuts nothing."""
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset, self.max_timestamp = self.base_offset, -1
        self.offset_of_max_timestamp, self.bytes_since_last_index_entry = self.base_offset, 0
        self.roll_base_ms = None
        expected = max(min_offset, self.base_offset)
        size, pos, chunk, chunk_pos = self.size, 0, b"", 0
        epochs, index_entries, time_entries = [], [], []
        while size - pos >= HEADER_SIZE:
            rel = pos - chunk_pos
            if rel + LOG_OVERHEAD > len(chunk):
                chunk, chunk_pos, rel = (
                    os.pread(self.fd, min(RECOVERY_CHUNK, size - pos), pos),
                    pos,
                    0,
                )
            total = LOG_OVERHEAD + int.from_bytes(chunk[rel + 8 : rel + 12], "big", signed=True)
            if total < HEADER_SIZE or pos + total > size:
                break
            if rel + total > len(chunk):
                chunk = os.pread(self.fd, min(max(RECOVERY_CHUNK, total), size - pos), pos)
                chunk_pos, rel = pos, 0
            try:
                header = validate_batch(chunk, rel)
            except CorruptBatchError:
                break
            if header.base_offset < expected or header.last_offset - self.base_offset > INT_MAX:
                break
            if self.roll_base_ms is None:
                self.roll_base_ms = header.max_timestamp if header.max_timestamp >= 0 else now_ms
            self._track(
                pos, total, header.last_offset, header.max_timestamp, index_entries, time_entries
            )
            if header.partition_leader_epoch >= 0:
                epochs.append((header.partition_leader_epoch, header.base_offset))
            expected = self.next_offset = header.next_offset
            pos += total
        truncated = size - pos
        if truncated and self.next_offset < protect_below:
            raise SegmentCorrupt(
                f"{self.log_path}: the bytes from position {pos} (offset {self.next_offset} on) "
                f"are damaged, below the recovery point {protect_below}, so they were once "
                "flushed whole"
            )
        if truncated:
            os.ftruncate(self.fd, pos)
            self.size = pos
        # Markers cut off with a torn tail leave no aborted transaction behind; the producer
        # state's replay of the log re-indexes any marker whose entry never reached the disk.
        self.txn_index.truncate_to(self.next_offset)
        self.offset_index.append(index_entries)
        self.time_index.append(time_entries)
        return epochs, truncated
