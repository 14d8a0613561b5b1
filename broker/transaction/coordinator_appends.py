"""TransactionCoordinator's appends and replay: the part (a mixin) that writes a transit to
`__transaction_state`, applies it once committed or answers its failure, and loads the log."""

from __future__ import annotations

from broker.transaction.messages import (
    AddPartitionsResponse,
    AppendRecords,
    Effect,
    InitProducerIdResponse,
    Respond,
    TxnResponse,
)
from broker.transaction.metadata import (
    TransactionMetadata,
    Transit,
)
from broker.transaction.records import (
    decode_record,
    encode_record,
)
from clients.errors import ErrorCode

E = ErrorCode
# The coordinator's status (TransactionCoordinator in partition_coordinator.py moves it).
LOADING, ACTIVE, RESIGNED = "loading", "active", "resigned"

# What a failed `__transaction_state` append tells the client (Kafka's TransactionStateManager).
_APPEND_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
}


def append_error(error: ErrorCode) -> ErrorCode:
    return _APPEND_ERRORS.get(error, E.UNKNOWN_SERVER_ERROR)


class CoordinatorAppends:
    """TransactionCoordinator's records; the attributes are its (partition_coordinator.py)."""

    def _write(self, meta: TransactionMetadata, transit: Transit) -> tuple[Effect, ...]:
        meta.pending = transit
        self._next_append_id += 1
        self._appends[self._next_append_id] = meta.transactional_id
        return (
            AppendRecords(
                self._next_append_id, (encode_record(meta.transactional_id, transit.value),)
            ),
        )

    def on_append_result(
        self,
        append_id: int,
        error: ErrorCode = ErrorCode.NONE,
        now_ms: int = 0,
        base_offset: int = -1,
    ) -> tuple[Effect, ...]:
        """The record of AppendRecords `append_id` committed (error NONE) or failed."""
        txn_id = self._appends.pop(append_id, None)
        meta = self._txns.get(txn_id) if txn_id is not None else None
        if meta is None or meta.pending is None or self.status != ACTIVE:
            return ()
        transit, meta.pending = meta.pending, None
        if base_offset >= 0:
            self.loaded_offset = base_offset + 1
        if error != E.NONE:
            return self._append_failed(meta, transit, error, now_ms)
        if transit.value is None:
            del self._txns[txn_id]
            return ()
        meta.apply(transit.value, transit.last_producer_epoch)
        if transit.kind == "init":
            return (
                Respond(
                    transit.handle,
                    InitProducerIdResponse(E.NONE, meta.producer_id, meta.producer_epoch),
                ),
            )
        if transit.kind in ("add", "offsets"):
            return (Respond(transit.handle, transit.answer),)
        if transit.kind == "end":
            return (Respond(transit.handle, TxnResponse(E.NONE)), self._markers(meta))
        if transit.kind == "fence":
            out: list[Effect] = [self._markers(meta)]
            if transit.handle is not None:  # InitProducerId: retry once the abort is done
                out.insert(
                    0,
                    Respond(
                        transit.handle,
                        InitProducerIdResponse(
                            E.CONCURRENT_TRANSACTIONS,
                            message="the ongoing transaction of transactional "
                            f"id '{txn_id}' is being aborted; retry",
                        ),
                    ),
                )
            return tuple(out)
        return ()  # "complete"

    def _append_failed(
        self, meta: TransactionMetadata, transit: Transit, error: ErrorCode, now_ms: int
    ) -> tuple[Effect, ...]:
        if transit.was_new:
            del self._txns[meta.transactional_id]  # it never existed durably
        if transit.kind == "complete":
            # The markers are written: only the record is owed. Try again shortly.
            self._retry_complete[meta.transactional_id] = now_ms + self.config.retry_backoff_ms
        if transit.handle is None:
            return ()  # fence of a timed-out transaction, expiry: the next tick tries again
        return (Respond(transit.handle, self._error_answer(transit.kind, append_error(error))),)

    @staticmethod
    def _error_answer(kind: str, error: ErrorCode):
        if kind == "add":
            return AddPartitionsResponse(error)
        if kind in ("init", "fence"):
            return InitProducerIdResponse(error)
        return TxnResponse(error)

    def replay(self, key: bytes, value: bytes | None, offset: int = -1) -> None:
        """Apply one `__transaction_state` record of the partition while loading it."""
        txn_id, v = decode_record(key, value)
        if offset >= 0:
            self.loaded_offset = offset + 1
        if v is None:
            self._txns.pop(txn_id, None)
            return
        meta = self._txns.get(txn_id)
        if meta is None:
            self._txns[txn_id] = TransactionMetadata.from_value(txn_id, v)
        else:
            last = (
                meta.producer_epoch
                if v.producer_epoch > meta.producer_epoch and v.producer_id == meta.producer_id
                else meta.last_producer_epoch
            )
            meta.apply(v, last)
