"""The Sender's steps for an idempotent or transactional producer (a mixin): InitProducerId for
its id and epoch, AddPartitionsToTxn before a partition's first batch, and failing what an aborting
transaction has not sent."""

from __future__ import annotations

import logging

from clients.errors import ErrorCode, KraftError
from clients.producer.clock import now_ms
from clients.producer.future import fail_futures
from clients.wire import broker_pb2

# The Sender's logger: these lines went out under its name before this file split off.
log = logging.getLogger("clients.producer.sender")


class SenderIdempotence:
    """The Sender's producer-id and transaction steps; the attributes are the Sender's."""

    # --- transactions ----------------------------------------------------------------------
    def _maybe_add_partitions(self, now: int, next_ms: int | None) -> int | None:
        """Start AddPartitionsToTxn for the partitions waiting (one request at a time,
        retry_backoff_ms after a retriable error). Returns next_ms."""
        if self._adding:
            return next_ms
        retry_at = self.txn.add_retry_at_ms
        if now < retry_at:
            return retry_at if next_ms is None else min(next_ms, retry_at)
        with self.lock:
            partitions = self.txn.core.take_partitions_to_add()
        if partitions:
            self._adding = True
            self._nursery.start_soon(self._add_partitions, partitions)
        return next_ms

    async def _add_partitions(self, partitions: list[tuple]) -> None:
        try:
            await self.txn.add_partitions(partitions)
        finally:
            self._adding = False
            self.wake()

    def _drop_undrained_locked(self, txn) -> None:
        """The transaction will not commit: what is not out yet is failed, never sent."""
        batches, futures = self.acc.abort_undrained()
        if not batches and not futures:
            return
        exc = KraftError(
            txn.error.code if txn.error else ErrorCode.INVALID_TXN_STATE,
            f"not sent: the transaction is being aborted"
            f"{f' ({txn.error.message})' if txn.error else ''}",
        )
        for b in batches:
            self.idempotence.on_failed(b, None)  # a retry's earlier attempt may have landed
            self._fail_locked(b, exc)
        self.memory_freed()
        fail_futures(futures, exc)

    # --- producer id (idempotence) ---------------------------------------------------------

    def _maybe_init_producer_id(self, now: int, next_ms: int | None) -> int | None:
        """Start InitProducerId when the producer needs an id or a new epoch (one at a time,
        retry_backoff_ms apart); fail every batch when no id can be had. Returns next_ms."""
        if self._init_error is not None:
            exc, self._init_error = self._init_error, None
            self.abort(exc)
        if self.idempotence.ready or self._init_running:
            return next_ms
        if any(self._in_flight.values()):
            # A new epoch only once every request of the old one is answered: one landing after
            # it would be refused as fenced (INVALID_PRODUCER_EPOCH) and its records lost.
            return next_ms
        start_at = self._last_init_ms + self.acc.retry_backoff_ms
        if now < start_at:
            return start_at if next_ms is None else min(next_ms, start_at)
        self._init_running = True
        self._nursery.start_soon(self._init_producer_id)
        return next_ms

    async def _init_producer_id(self) -> None:
        idem = self.idempotence
        try:
            with self.lock:
                producer_id, epoch = idem.init_request()
            request = broker_pb2.InitProducerIdRequest()
            if producer_id is not None:
                request.producer_id, request.producer_epoch = producer_id, epoch
            resp = await self.cluster.call_any("InitProducerId", request)
            if resp.error_code:
                raise KraftError(resp.error_code, resp.error_message)
            with self.lock:
                idem.set_producer(resp.producer_id, resp.producer_epoch)
            log.debug("producer id %d epoch %d", resp.producer_id, resp.producer_epoch)
        except KraftError as exc:
            log.debug("InitProducerId failed: %s", exc)
            if not exc.retriable:
                self._init_error = KraftError(
                    exc.code,
                    f"no producer id for the idempotent producer ({exc.message}); "
                    f"send without idempotence with enable_idempotence=False",
                )
        finally:
            self._last_init_ms = now_ms()
            self._init_running = False
            self.wake()
