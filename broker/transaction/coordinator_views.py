"""TransactionCoordinator's read-only views: DescribeTransactions and ListTransactions over the
ids it holds (a mixin; loading or resigned, they answer the error instead)."""

from __future__ import annotations

from broker.transaction.messages import (
    DescribedTransaction,
)
from broker.transaction.metadata import (
    COMPLETED,
)
from clients.errors import ErrorCode

E = ErrorCode


class CoordinatorViews:
    """TransactionCoordinator's describe and list; the attributes are its."""

    def describe(self, transactional_id: str) -> DescribedTransaction:
        error = self._unavailable()
        meta = self._txns.get(transactional_id) if error is None else None
        if error is None and meta is None:
            error = E.TRANSACTIONAL_ID_NOT_FOUND
        if error is not None:
            return DescribedTransaction(transactional_id, error)
        return DescribedTransaction(
            transactional_id,
            E.NONE,
            meta.state,
            meta.producer_id,
            meta.producer_epoch,
            meta.timeout_ms,
            meta.txn_start_ms if meta.state not in COMPLETED else -1,
            tuple(sorted(meta.partitions)),
        )

    def list_transactions(
        self, states: frozenset[str] = frozenset(), producer_ids: frozenset[int] = frozenset()
    ) -> tuple[ErrorCode, tuple[tuple[str, int, str], ...]]:
        """(error, ((transactional id, producer id, state), ...)); empty filters match all."""
        error = self._unavailable()
        if error is not None:
            return error, ()
        return E.NONE, tuple(
            sorted(
                (m.transactional_id, m.producer_id, m.state)
                for m in self._txns.values()
                if (not states or m.state in states)
                and (not producer_ids or m.producer_id in producer_ids)
            )
        )
