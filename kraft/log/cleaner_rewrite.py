"""Log compaction, the rewrite of one group of segments against the offset map (cleaner.py says
which records stay): kept batches copied byte for byte, thinned ones rebuilt with a new CRC."""

from __future__ import annotations

import os
import struct

import google_crc32c

from clients.record.batch_header import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    CorruptBatchError,
)
from clients.record.codec import decode_records
from clients.record.compression import compress, decompress
from clients.record.control import decode_marker
from clients.record.varint import decode_varint
from kraft.log.cleaner_swap import CLEANED_SUFFIX
from kraft.log.cleaner_txns import CleanedTransactions
from kraft.log.log_retention import largest_timestamp
from kraft.log.segment import BatchInfo, LogSegment

READ_CHUNK = 4 * 1024 * 1024
WRITE_CHUNK = 4 * 1024 * 1024

# The header split around the CRC: what precedes it, and the CRC-covered part (attributes..count).
_HEAD = struct.Struct(">qiibI")
_TAIL = struct.Struct(">hiqqqhii")


def on_marker(txns: CleanedTransactions, header: BatchHeader, records) -> tuple[bool, object]:
    """(may the marker go, the .txnindex entry to keep with it); an unreadable control batch
    stays, as Kafka keeps control types it does not know."""
    try:
        marker = decode_marker(records[0][2], records[0][3])
    except (CorruptBatchError, IndexError):
        return False, None
    return txns.on_marker(header.producer_id, marker.committed, header.last_offset)


class SegmentCleaner:
    """Rewrites groups of one log's segments (read views) against the offset map."""

    def __init__(
        self,
        dir,
        config,
        segments: list[LogSegment],
        offset_map: dict,
        delete_horizon_ms: int,
        bound: int,
    ) -> None:
        self.dir, self.config = dir, config
        self.segments = segments
        self.bound = bound
        self.offset_map = offset_map
        self.delete_horizon_ms = delete_horizon_ms
        self._producer_last: dict[int, int] | None = None
        self.txns = CleanedTransactions()  # one walk in offset order over every group
        self.records_read = self.records_kept = 0

    def clean_group(
        self, group: list[LogSegment], aborted: list, *, replaces_txn_index: bool = False
    ) -> LogSegment | None:
        """The group's cleaned segment (`.cleaned`, fsynced, sealed); None if it loses nothing.
        aborted[i]: the aborted transactions with data in group[i]. `replaces_txn_index`:
        group[0] has .txnindex entries, so the cleaned segment carries a .txnindex even with
        none left (cleaner_swap.py says why)."""
        config = self.config
        new = LogSegment.create(
            self.dir,
            group[0].base_offset,
            config.index_interval_bytes,
            config.segment_index_bytes,
            CLEANED_SUFFIX,
        )
        try:
            changed = len(group) > 1
            out, infos = bytearray(), []
            for seg, seg_aborted in zip(group, aborted):
                drop_tombstones = largest_timestamp(seg) < self.delete_horizon_ms
                self.txns.add_aborted(seg_aborted)
                for data, batches in read_batches(seg):
                    changed |= self._filter_chunk(data, batches, drop_tombstones, out, infos, new)
                    if len(out) >= WRITE_CHUNK:
                        new.append(out, 0, len(out), infos, None)
                        out, infos = bytearray(), []
            if changed:
                if infos:
                    new.append(out, 0, len(out), infos, None)
                # Kafka keeps the group's last-modified time, which mtime-based retention reads.
                mtime_ns = max(os.fstat(s.fd).st_mtime_ns for s in group)
                os.utime(new.log_path, ns=(mtime_ns, mtime_ns))
                if replaces_txn_index and not new.txn_index.entries:
                    new.txn_index.create_empty()
                new.flush()
                new.seal()
        except BaseException:
            new.delete()
            raise
        if not changed:  # one segment that loses nothing: leave it be
            new.delete()
            return None
        return new

    def _filter_chunk(
        self,
        data: bytes,
        batches,
        drop_tombstones: bool,
        out: bytearray,
        infos: list,
        new: LogSegment,
    ) -> bool:
        """Append the kept form of each batch in `data` to `out` (and to `new`'s .txnindex the
        aborted transactions whose markers stay); True if any batch changed."""
        records = decode_records(data, max_decompressed=self.bound)
        latest = self.offset_map.get
        changed, r = False, 0
        for pos, header in batches:
            n = header.records_count
            batch_records = records[r : r + n]
            r += n
            self.records_read += n
            if header.attributes & CONTROL_FLAG:
                removable, entry = (
                    on_marker(self.txns, header, batch_records) if n else (True, None)
                )
                if removable and drop_tombstones:
                    if not self._is_producers_last(header):
                        changed = True
                        continue
                    kept = [] if n else None  # Kafka's RETAIN_EMPTY: no marker record left
                else:
                    if entry is not None:
                        new.txn_index.append(entry)
                    kept = None  # None: the batch is copied as it is
            elif (
                self.txns.on_batch(header.producer_id, header.is_transactional, header.last_offset)
                and n
            ):
                kept = []  # an aborted transaction's: all of it goes
            elif n == 0:  # emptied by an earlier pass: stays while its producer's last
                kept = None if self._is_producers_last(header) else []
            else:
                kept = [
                    i
                    for i, rec in enumerate(batch_records)
                    if rec[2] is not None
                    and not (drop_tombstones and rec[3] is None)
                    and latest(rec[2], -1) <= rec[0]
                ]
                if len(kept) == n:
                    kept = None
            if kept is None:
                batch, max_ts = memoryview(data)[pos : pos + header.size], header.max_timestamp
                self.records_kept += n
            else:
                changed = True
                if kept:
                    batch, max_ts = _rebuild(data, pos, header, batch_records, kept, self.bound)
                    self.records_kept += len(kept)
                elif self._is_producers_last(header):
                    max_ts = header.max_timestamp
                    batch = _encode(header, b"", 0, max_ts, header.attributes & ~COMPRESSION_MASK)
                else:
                    continue
            infos.append(
                BatchInfo(len(out), len(batch), header.base_offset, header.last_offset, max_ts)
            )
            out += batch
        return changed

    def _is_producers_last(self, header: BatchHeader) -> bool:
        if header.producer_id < 0:
            return False
        if self._producer_last is None:  # headers only, and only once a batch empties
            self._producer_last = {}
            for seg in self.segments:
                for _, h in seg.headers():
                    if h.producer_id >= 0:
                        self._producer_last[h.producer_id] = h.base_offset
        return self._producer_last.get(header.producer_id) == header.base_offset


def _rebuild(data: bytes, pos: int, header: BatchHeader, records, kept: list[int], bound: int):
    """The batch with only records[kept]: their bytes are reused as they are (their offset and
    timestamp deltas stay right because base offset and base timestamp do not change)."""
    section = data[pos + HEADER_SIZE : pos + header.size]
    codec = header.attributes & COMPRESSION_MASK
    if codec:
        section = decompress(codec, section, bound)
    starts = _record_starts(section, header.records_count)
    body = b"".join([section[starts[i] : starts[i + 1]] for i in kept])
    if codec:
        body = compress(codec, body)
    if header.attributes & TIMESTAMP_TYPE_MASK:
        max_ts = header.max_timestamp  # LogAppendTime: the broker's stamp, not the records'
    else:
        max_ts = max(records[i][1] for i in kept)
    return _encode(header, body, len(kept), max_ts, header.attributes), max_ts


def _record_starts(section: bytes, count: int) -> list[int]:
    """Byte offsets where each record begins, plus the end (each starts with its varint length)."""
    starts, p = [0], 0
    for _ in range(count):
        length, p = decode_varint(section, p)
        p += length
        starts.append(p)
    if p != len(section):
        raise CorruptBatchError(f"records section of {len(section)} bytes ends at {p}")
    return starts


def _encode(header: BatchHeader, body: bytes, count: int, max_ts: int, attributes: int) -> bytes:
    tail = _TAIL.pack(
        attributes,
        header.last_offset_delta,
        header.base_timestamp,
        max_ts,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    crc = google_crc32c.extend(google_crc32c.value(tail), body)
    head = _HEAD.pack(
        header.base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        header.partition_leader_epoch,
        MAGIC,
        crc,
    )
    return head + tail + body


def read_batches(seg: LogSegment):
    """Yield (data, [(position in data, header)]) over the whole batches of `seg`, read a chunk at
    a time (a batch larger than a chunk comes alone)."""
    pos, size = 0, seg.size
    while pos < size:
        data = os.pread(seg.fd, min(READ_CHUNK, size - pos), pos)
        batches, p = [], 0
        while len(data) - p >= HEADER_SIZE:
            header = BatchHeader._make(HEADER.unpack_from(data, p))
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                raise CorruptBatchError(
                    f"{seg.log_path}: batch length {header.batch_length} at {pos + p}"
                )
            if p + header.size > len(data):
                break
            batches.append((p, header))
            p += header.size
        if not batches:
            if len(data) < HEADER_SIZE:
                raise CorruptBatchError(f"{seg.log_path}: torn batch at {pos}")
            data = os.pread(seg.fd, header.size, pos)
            batches, p = [(0, header)], header.size
            if len(data) < p:
                raise CorruptBatchError(f"{seg.log_path}: torn batch at {pos}")
        yield data, batches
        pos += p
