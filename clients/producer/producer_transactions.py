"""AsyncProducer's transactions (a mixin, confluent-kafka's names; timeouts in seconds, None: no
limit): each call checks the producer is transactional and hands over to its TransactionalDriver."""

from __future__ import annotations

from clients.errors import ErrorCode, KraftError
from clients.producer.transactional import TransactionalDriver
from clients.types import ConsumerGroupMetadata


class ProducerTransactions:
    """AsyncProducer's transaction calls; the attributes (_txn, _lock, flush) are its own."""

    def _transactional(self, what: str) -> TransactionalDriver:
        if self._txn is None:
            raise KraftError(
                ErrorCode.INVALID_TXN_STATE,
                f"{what}() needs a transactional producer: create it with "
                "transactional_id='my-app-1'",
            )
        return self._txn

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the transactional id's producer id and epoch from its transaction coordinator,
        fencing any older producer with the same id and ending its open transaction. Call once,
        before the first transaction; again after a timeout."""
        await self._transactional("init_transactions").init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: sends are allowed until commit or abort."""
        txn = self._transactional("begin_transaction")
        with self._lock:
            txn.core.begin_transaction()

    async def send_offsets_to_transaction(
        self, offsets: dict, group_metadata: ConsumerGroupMetadata, timeout: float | None = None
    ) -> None:
        """Commit a consumer's offsets ({TopicPartition: next offset to read}) as part of the
        transaction: they count only if it commits. `group_metadata`: the consumer's
        Consumer.group_metadata()."""
        await self._transactional("send_offsets_to_transaction").send_offsets(
            offsets, group_metadata, timeout
        )

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Raises when a record of the transaction failed (then only
        abort_transaction works) or the producer was fenced; after a timeout, call it again."""
        await self._transactional("commit_transaction").commit(self.flush, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not sent yet, wait for those out, and abort: none of the
        transaction's records or offsets become visible to read_committed consumers."""
        await self._transactional("abort_transaction").abort(self.flush, timeout)
