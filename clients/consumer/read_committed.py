"""read_committed on the consumer's side (Kafka's Fetcher.CompletedFetch): drop the batches of
aborted transactions from a fetched partition's records, using the answer's aborted
transactions (producer id, first offset) and the ABORT markers in the records.

Kafka's rule, batch by batch in offset order: every aborted transaction whose first offset is at
or below the batch's last offset marks its producer aborted; a transactional batch of an aborted
producer is dropped; that producer's ABORT marker ends it (its later batches are a new
transaction). Control batches are never records to the user and are dropped too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from clients.record.batch_header import CorruptBatchError
from clients.record.codec import decode_batch, iter_batches
from clients.record.control import decode_marker

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def isolation_level_of(name: str) -> int:
    try:
        return ISOLATION_LEVELS[name]
    except KeyError:
        raise ValueError(
            f"isolation_level must be 'read_uncommitted' or 'read_committed', not {name!r}"
        ) from None


def drop_aborted(data: bytes, aborted: Iterable[tuple[int, int]]) -> bytes:
    """The whole batches of `data` minus aborted transactions' batches and control batches;
    `aborted`: (producer id, first offset) of each aborted transaction the broker listed."""
    pending = sorted((first, pid) for pid, first in aborted)
    if not pending:
        return data
    aborted_pids: set[int] = set()
    kept, run_start, run_end = [], 0, 0
    for pos, header in iter_batches(data):
        while pending and pending[0][0] <= header.last_offset:
            aborted_pids.add(heapq.heappop(pending)[1])
        drop = False
        if header.is_control:
            drop = True
            if header.producer_id in aborted_pids and _is_abort(data, pos):
                aborted_pids.discard(header.producer_id)
        elif header.is_transactional and header.producer_id in aborted_pids:
            drop = True
        if drop:
            if run_end > run_start:
                kept.append(data[run_start:run_end])
            run_start = run_end = pos + header.size
        else:
            run_end = pos + header.size
    if run_end > run_start:
        kept.append(data[run_start:run_end])
    return b"".join(kept)


def _is_abort(data: bytes, pos: int) -> bool:
    try:
        _, records = decode_batch(data, pos)
        return bool(records) and not decode_marker(records[0].key, records[0].value).committed
    except CorruptBatchError:
        return False
