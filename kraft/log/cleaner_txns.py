"""What the log cleaner knows of transactions while it walks a log in offset order (Kafka's
CleanedTransactionMetadata): which batches belong to aborted transactions (removed, their keys
never enter the offset map), and which markers may go.

Rules, Kafka's:
- an aborted transaction (from the .txnindex) starts at its first offset; from there its
  producer's transactional batches are aborted data, until its ABORT marker;
- an ABORT marker stays while any batch of its transaction was met in this pass (that data goes
  now; its .txnindex entry is kept with the marker), so it outlives its data by one pass;
- a COMMIT marker stays while any batch of its transaction was met in this pass;
- a marker that may go still waits for delete.retention.ms (the caller's segment-age check,
  as for tombstones), so a consumer that read the data sees the marker too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from kraft.log.transaction_index import AbortedTxn


class CleanedTransactions:
    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._known: set[AbortedTxn] = set()
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # pid -> (txn, data met)
        self._committed: set[int] = set()  # pids with data met

    def add_aborted(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            if txn not in self._known:
                self._known.add(txn)
                heapq.heappush(self._pending, (txn.first_offset, txn.last_offset, txn))

    def _start_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(txn.producer_id, (txn, False))

    def on_batch(self, producer_id: int, transactional: bool, last_offset: int) -> bool:
        """A data batch: True if it is an aborted transaction's (to be removed)."""
        self._start_up_to(last_offset)
        if not transactional:
            return False
        found = self._aborted.get(producer_id)
        if found is not None:
            self._aborted[producer_id] = (found[0], True)
            return True
        self._committed.add(producer_id)
        return False

    def on_marker(
        self, producer_id: int, committed: bool, last_offset: int
    ) -> tuple[bool, AbortedTxn | None]:
        """A marker: (whether it may be removed, the .txnindex entry to keep with it)."""
        self._start_up_to(last_offset)
        if committed:
            if producer_id in self._committed:
                self._committed.discard(producer_id)
                return False, None
            return True, None
        found = self._aborted.pop(producer_id, None)
        if found is not None and found[1]:
            return False, found[0]
        return True, None
