"""Producer state on disk and its load: `<offset:020d>.snapshot` files in the partition dir (Kafka's
name and byte layout, written crash-safely), and the log's batch headers replayed after them."""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import google_crc32c

from broker.idempotence.producer_state import (
    SEQUENCE_LIMIT,
    BatchMetadata,
    ProducerEntry,
    ProducerStateManager,
)
from clients.record.batch_header import CorruptBatchError
from clients.record.codec import decode_batch
from clients.record.control import EndTxnMarker, decode_marker
from kraft.fs import atomic_write
from kraft.log.log import Log, OffsetOutOfRange
from kraft.log.transaction_index import AbortedTxn

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
VERSION = 1
KEEP_SNAPSHOTS = 2  # the newest, and one before it in case the newest is torn
# Kafka's ProducerStateManager schema v1: version int16, crc uint32 (CRC32C of the rest), then an
# array (int32 count) of entries: producer id int64, epoch int16, last sequence int32, last offset
# int64, offset delta int32, timestamp int64, coordinator epoch int32, txn first offset int64.
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshot(ValueError):
    """A snapshot file that is torn or damaged: ignore it and rebuild from the log."""


def snapshot_path(dir: Path, offset: int) -> Path:
    return Path(dir) / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshots(dir: Path) -> list[int]:
    """Offsets of the snapshot files in `dir`, ascending."""
    return sorted(
        int(name[: -len(SNAPSHOT_SUFFIX)]) for name in os.listdir(dir) if _is_snapshot_name(name)
    )


# -- the byte format ----------------------------------------------------------------------------
def encode_snapshot(entries: list[ProducerEntry]) -> bytes:
    """One row per remembered batch, oldest first, each with the producer's coordinator epoch and
    open transaction's first offset (Kafka keeps only the last batch per producer and its reader
    keeps the last row of each id, so it reads these files too). A producer known only by a
    marker (no batch of its epoch) gets one row with last sequence and last offset -1."""
    rows = []
    for e in entries:
        tail = (e.coordinator_epoch, e.current_txn_first_offset)
        if not e.batches:
            rows.append(_ENTRY.pack(e.producer_id, e.epoch, -1, -1, 0, e.marker_timestamp, *tail))
        for b in e.batches:
            delta = b.last_offset - b.first_offset
            rows.append(
                _ENTRY.pack(
                    e.producer_id,
                    e.epoch,
                    b.last_seq,
                    b.last_offset,
                    delta,
                    max(b.timestamp, e.marker_timestamp),
                    *tail,
                )
            )
    body = _COUNT.pack(len(rows)) + b"".join(rows)
    return _HEAD.pack(VERSION, google_crc32c.value(body)) + body


def decode_snapshot(data: bytes, max_batches: int = 5) -> list[ProducerEntry]:
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshot(f"{len(data)} bytes is too short for a snapshot header")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptSnapshot(f"unknown snapshot version {version} (this broker reads {VERSION})")
    body = data[_HEAD.size :]
    if google_crc32c.value(body) != crc:
        raise CorruptSnapshot("CRC mismatch (a torn or damaged write)")
    (count,) = _COUNT.unpack_from(body, 0)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshot(f"{count} entries do not fit {len(body)} bytes")
    by_id: dict[int, ProducerEntry] = {}
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first = (
            _ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size)
        )
        entry = by_id.get(pid) or ProducerEntry(pid, epoch)
        if last_offset >= 0:
            batch = BatchMetadata(
                (last_seq - delta) % SEQUENCE_LIMIT, last_seq, last_offset - delta, last_offset, ts
            )
            entry = entry.with_batch(epoch, batch, max_batches)
        else:
            entry = replace(entry, epoch=epoch, marker_timestamp=ts)
        by_id[pid] = replace(
            entry, coordinator_epoch=coordinator_epoch, current_txn_first_offset=txn_first
        )
    return list(by_id.values())


def read_snapshot(path: Path, max_batches: int = 5) -> list[ProducerEntry]:
    return decode_snapshot(Path(path).read_bytes(), max_batches)


def write_snapshot(dir: Path, state: ProducerStateManager) -> Path:
    """Write the state as of `state.end_offset` (tmp, fsync, rename, fsync dir), then delete all
    but the newest KEEP_SNAPSHOTS files."""
    pending = take_snapshot(dir, state)
    write_pending_snapshot(pending)
    state.snapshot_offset = pending.offset
    return snapshot_path(dir, pending.offset)


@dataclasses.dataclass(frozen=True)
class PendingSnapshot:
    """A snapshot taken where the state lives (the loop), for any thread to write. The partition
    dir is held open: a write that runs after the dir was renamed for deletion goes with it,
    never into a partition dir created since under the old name."""

    dir_fd: int
    offset: int
    data: bytes


def take_snapshot(dir: Path, state: ProducerStateManager) -> PendingSnapshot:
    return PendingSnapshot(
        os.open(dir, os.O_RDONLY | os.O_DIRECTORY),
        state.end_offset,
        encode_snapshot(state.entries()),
    )


def write_pending_snapshot(pending: PendingSnapshot) -> None:
    """Any thread: write it crash-safely, delete all but the newest KEEP_SNAPSHOTS, close the
    dir fd."""
    dir_fd = pending.dir_fd
    try:
        atomic_write(snapshot_path(Path(), pending.offset), pending.data, dir_fd=dir_fd)
        names = sorted(name for name in os.listdir(dir_fd) if _is_snapshot_name(name))
        for name in names[:-KEEP_SNAPSHOTS]:
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
    finally:
        os.close(dir_fd)


def _is_snapshot_name(name: str) -> bool:
    stem = name[: -len(SNAPSHOT_SUFFIX)]
    return name.endswith(SNAPSHOT_SUFFIX) and len(stem) == 20 and stem.isdigit()


def delete_snapshots_above(dir: Path, offset: int) -> None:
    """A snapshot past the log end describes batches the log no longer has (a truncation, or a
    torn tail cut at recovery): it must never be loaded."""
    for o in list_snapshots(dir):
        if o > offset:
            snapshot_path(dir, o).unlink(missing_ok=True)


# -- the log side -------------------------------------------------------------------------------
def iter_log_headers(log_: Log, start_offset: int) -> Iterator:
    """Batch headers of `log_` from the batch holding `start_offset` to the end (headers only:
    no record is read)."""
    for seg in log_.segments:
        if seg.next_offset <= start_offset:
            continue
        found = seg.translate_offset(start_offset)
        if found is None:
            continue
        for _, header in seg.headers(found[0]):
            yield header
        start_offset = seg.next_offset


def read_marker(log_: Log, header) -> EndTxnMarker | None:
    """The end-transaction marker of the control batch `header` describes, read from `log_`
    (None, logged, if it cannot be read: that batch then closes nothing)."""
    try:
        data = log_.read(header.base_offset, header.size).records
        _, records = decode_batch(data)
        if not records:
            return None  # emptied by the cleaner once its transaction's data was gone
        return decode_marker(records[0].key, records[0].value)
    except (CorruptBatchError, OffsetOutOfRange) as exc:
        log.warning(
            "%s-%d: the control batch at offset %d is not a readable marker: %s",
            log_.topic,
            log_.partition,
            header.base_offset,
            exc,
        )
        return None


def apply_batches(state: ProducerStateManager, log_: Log, headers: Iterable) -> None:
    """Record batches now in `log_` (`headers`, final offsets) in `state`, and index in the log's
    .txnindex each transaction an ABORT marker among them closed (an entry already there, met
    again by a replay, is not written twice)."""
    for done in state.on_replicated_batches(headers, lambda h: read_marker(log_, h)):
        if done.is_aborted:
            log_.append_aborted_txn(
                AbortedTxn(
                    done.producer_id, done.first_offset, done.last_offset, done.last_stable_offset
                )
            )


def load_producer_state(log_: Log, name: str = "") -> ProducerStateManager:
    """The state for `log_`: the newest readable snapshot at or below the log end, then every
    batch after it. A damaged snapshot is deleted and an older one (or the whole log) used."""
    state = ProducerStateManager(name or f"{log_.topic}-{log_.partition}")
    reload(state, log_)
    return state


def reload(state: ProducerStateManager, log_: Log) -> None:
    """Rebuild `state` from snapshots and `log_` (after a truncation, or on first load)."""
    delete_snapshots_above(log_.dir, log_.log_end_offset)
    state.load([], log_.log_start_offset)
    for offset in reversed(list_snapshots(log_.dir)):
        path = snapshot_path(log_.dir, offset)
        try:
            state.load(read_snapshot(path, state.max_batches), offset)
            state.snapshot_offset = offset
            break
        except (CorruptSnapshot, OSError) as exc:
            log.warning(
                "ignoring producer state snapshot %s: %s; rebuilding from the log", path, exc
            )
            path.unlink(missing_ok=True)
    state.truncate_head(log_.log_start_offset)
    catch_up(state, log_)


def catch_up(state: ProducerStateManager, log_: Log) -> None:
    """Make `state` describe all of `log_`: replay the batches it has not seen; reload when the
    log now ends below what the state has seen (it was truncated)."""
    leo = log_.log_end_offset
    if state.end_offset == leo:
        return
    if state.end_offset > leo:
        reload(state, log_)
        return
    if state.end_offset < log_.log_start_offset:
        state.truncate_head(log_.log_start_offset)
    apply_batches(state, log_, iter_log_headers(log_, state.end_offset))
    state.end_offset = leo
