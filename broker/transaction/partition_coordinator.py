"""TransactionCoordinator: every transactional id of one `__transaction_state` partition as a
pure core (Kafka's TransactionCoordinator with its TransactionStateManager): requests, markers
written, `tick` and append results in with `now_ms`; effects out. Its appends and replay are in
coordinator_appends.py, describe and list in coordinator_views.py (mixins)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from broker.transaction.coordinator_appends import (  # noqa: F401  (append_error: tests')
    ACTIVE,
    LOADING,
    RESIGNED,
    CoordinatorAppends,
    append_error,
)
from broker.transaction.coordinator_views import CoordinatorViews
from broker.transaction.messages import (
    NO_PRODUCER_EPOCH,
    AddPartitionsRequest,
    AddPartitionsResponse,
    Effect,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    Respond,
    SendMarkers,
    TransactionConfig,
    TxnResponse,
)
from broker.transaction.metadata import (
    COMPLETE,
    COMPLETED,
    MAX_PRODUCER_EPOCH,
    PREPARE,
    TransactionMetadata,
    Transit,
)
from broker.transaction.records import (
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TransactionLogValue,
)
from clients.errors import ErrorCode
from clients.types import TopicPartition

# The rules (Kafka's), in one place:
# - InitProducerId: a new id gets a fresh producer id at epoch 0. A known id in Empty or
#   Complete* gets its epoch bumped (KIP-360: a request naming the current epoch bumps it, one
#   naming the last epoch is a retry and gets the current one, any other is PRODUCER_FENCED); at
#   epoch 32766 the producer id is rotated instead. An Ongoing transaction is first aborted with
#   a bumped epoch (the fence: the old instance's next request is PRODUCER_FENCED, the partition
#   leaders reject its writes) and the caller hears CONCURRENT_TRANSACTIONS: it retries and gets
#   a second bump once the abort is complete. In Prepare* (markers being written) the answer is
#   CONCURRENT_TRANSACTIONS.
# - AddPartitionsToTxn / AddOffsetsToTxn: the producer id must be the id's
#   (INVALID_PRODUCER_ID_MAPPING), the epoch its epoch (PRODUCER_FENCED); Empty or Complete* ->
#   Ongoing with the start time now; Ongoing adds partitions (nothing to write when all are in).
#   KIP-890's verify_only adds nothing and answers, per partition, whether it is in.
# - EndTxn: Ongoing -> PrepareCommit/PrepareAbort; answered once that record is committed, then
#   the markers go out, and once every partition has one, Complete* is written. A retried
#   EndTxn of a transaction already completed the same way is answered NONE; the other way,
#   or in Empty, INVALID_TXN_STATE; while its markers are still being written,
#   CONCURRENT_TRANSACTIONS.
# - Any request for an id whose record is being appended: CONCURRENT_TRANSACTIONS.
# - tick: an Ongoing transaction older than its timeout is fenced and aborted like above; an id
#   in Empty/Complete* not updated for transactional.id.expiration.ms gets a tombstone.
# - Only a committed record changes the durable state (`replay`, also used when a new
#   coordinator loads the partition); a failed append leaves the id as its last record says.
#   On becoming coordinator, every Prepare* transaction's markers are sent again.

E = ErrorCode


class TransactionCoordinator(CoordinatorAppends, CoordinatorViews):
    """Drive it: `replay` every record of the partition, then `become_coordinator` (and carry out
    the markers it returns); afterwards `handle_*` per RPC, `tick` by `next_deadline_ms()`,
    `on_append_result` for each AppendRecords in append order and `on_markers_written` when a
    SendMarkers is done. Requests that write are answered by a Respond effect of that call or a
    later one; every handle is answered exactly once."""

    def __init__(self, partition: int = 0, config: TransactionConfig | None = None) -> None:
        self.partition = partition
        self.config = config or TransactionConfig()
        self.status = LOADING
        self.coordinator_epoch = -1
        self.loaded_offset = 0
        self._txns: dict[str, TransactionMetadata] = {}
        self._appends: dict[int, str] = {}  # append id -> transactional id
        self._next_append_id = 0
        self._next_check_ms: int | None = None
        self._retry_complete: dict[str, int] = {}  # id -> when to write Complete* again

    # -- life cycle -------------------------------------------------------------------------------
    def become_coordinator(self, coordinator_epoch: int, now_ms: int) -> tuple[Effect, ...]:
        """Loading is over: decided transactions get their markers (again: the old coordinator
        may have died before writing them all)."""
        self.status, self.coordinator_epoch = ACTIVE, coordinator_epoch
        self._next_check_ms = now_ms + self.config.abort_timed_out_cleanup_interval_ms
        return tuple(
            self._markers(m)
            for m in self._txns.values()
            if m.state in (PREPARE_COMMIT, PREPARE_ABORT)
        )

    def resign(self) -> tuple[Effect, ...]:
        """The partition moved away: answer everything parked NOT_COORDINATOR; drop all state."""
        out = []
        for meta in self._txns.values():
            if meta.pending is not None and meta.pending.handle is not None:
                out.append(
                    Respond(
                        meta.pending.handle,
                        self._error_answer(meta.pending.kind, E.NOT_COORDINATOR),
                    )
                )
        self.status, self._txns, self._appends, self._retry_complete = RESIGNED, {}, {}, {}
        return tuple(out)

    def _unavailable(self) -> ErrorCode | None:
        return {LOADING: E.COORDINATOR_LOAD_IN_PROGRESS, RESIGNED: E.NOT_COORDINATOR}.get(
            self.status
        )

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def transactions(self) -> Iterable[TransactionMetadata]:
        return self._txns.values()

    # -- InitProducerId ---------------------------------------------------------------------------
    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether an InitProducerId now would need a fresh producer id (a new id, or an epoch
        used up): the driver gets one (an await) and passes it in."""
        meta = self._txns.get(transactional_id)
        return meta is None or (meta.state in COMPLETED and meta.epoch_exhausted)

    def handle_init_producer_id(
        self,
        handle: Hashable,
        req: InitProducerIdRequest,
        now_ms: int,
        new_producer_id: int | None = None,
    ) -> tuple[Effect, ...]:
        def refuse(error: ErrorCode, message: str = "") -> tuple[Effect, ...]:
            return (Respond(handle, InitProducerIdResponse(error, message=message)),)

        error = self._unavailable()
        if error is not None:
            return refuse(error)
        if not req.transactional_id:
            return refuse(E.INVALID_REQUEST, "the transactional id is empty")
        if not 0 < req.transaction_timeout_ms <= self.config.max_timeout_ms:
            return refuse(
                E.INVALID_TRANSACTION_TIMEOUT,
                f"transaction timeout {req.transaction_timeout_ms} ms is not in 1.."
                f"{self.config.max_timeout_ms} (transaction.max.timeout.ms)",
            )
        meta = self._txns.get(req.transactional_id)
        if self.needs_producer_id(req.transactional_id) and new_producer_id is None:
            return refuse(E.CONCURRENT_TRANSACTIONS, "a new producer id is needed; retry")
        if meta is None:
            meta = self._txns[req.transactional_id] = TransactionMetadata(
                req.transactional_id,
                new_producer_id,
                NO_PRODUCER_EPOCH,
                req.transaction_timeout_ms,
                EMPTY,
                last_update_ms=now_ms,
            )
            return self._init_transit(handle, meta, req, now_ms, new_producer_id, was_new=True)
        if meta.pending is not None or meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return refuse(E.CONCURRENT_TRANSACTIONS, self._busy(meta))
        if (
            req.producer_id >= 0
            and meta.producer_epoch != NO_PRODUCER_EPOCH
            and req.producer_id != meta.producer_id
        ):
            return refuse(
                E.PRODUCER_FENCED,
                f"producer id {req.producer_id} is not the current "
                f"one of transactional id '{meta.transactional_id}'",
            )
        if meta.state == ONGOING:
            return self._fence(handle, meta, now_ms)
        if meta.epoch_exhausted:
            return self._init_transit(handle, meta, req, now_ms, new_producer_id)
        return self._init_transit(handle, meta, req, now_ms)

    def _init_transit(
        self,
        handle,
        meta: TransactionMetadata,
        req: InitProducerIdRequest,
        now_ms: int,
        new_producer_id: int | None = None,
        was_new: bool = False,
    ) -> tuple[Effect, ...]:
        """Kafka's prepareIncrementProducerEpoch (or, with `new_producer_id`, the rotation)."""
        if new_producer_id is not None:
            pid, epoch, last = new_producer_id, 0, NO_PRODUCER_EPOCH
        else:
            pid = meta.producer_id
            expected = req.producer_epoch if req.producer_id >= 0 else None
            if expected is None:
                epoch, last = meta.producer_epoch + 1, NO_PRODUCER_EPOCH
            elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected == meta.producer_epoch:
                epoch, last = meta.producer_epoch + 1, meta.producer_epoch
            elif expected == meta.last_producer_epoch:
                epoch, last = meta.producer_epoch, meta.last_producer_epoch  # a retry
            else:
                return (
                    Respond(
                        handle,
                        InitProducerIdResponse(
                            E.PRODUCER_FENCED,
                            message=f"epoch {expected} of producer {pid} is neither "
                            f"the current ({meta.producer_epoch}) nor the last one",
                        ),
                    ),
                )
        value = TransactionLogValue(
            pid, epoch, req.transaction_timeout_ms, EMPTY, frozenset(), now_ms, -1
        )
        return self._write(meta, Transit("init", value, last, handle, was_new=was_new))

    def _fence(
        self, handle: Hashable | None, meta: TransactionMetadata, now_ms: int
    ) -> tuple[Effect, ...]:
        """Kafka's prepareFenceProducerEpoch then an abort: the PrepareAbort record carries the
        bumped epoch, so the markers fence the old instance at every partition too."""
        epoch = min(meta.producer_epoch + 1, MAX_PRODUCER_EPOCH)
        value = meta.next_value(producer_epoch=epoch, state=PREPARE_ABORT, last_update_ms=now_ms)
        return self._write(meta, Transit("fence", value, NO_PRODUCER_EPOCH, handle))

    # -- AddPartitionsToTxn, AddOffsetsToTxn ------------------------------------------------------
    def handle_add_partitions(
        self, handle: Hashable, req: AddPartitionsRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        def whole(error: ErrorCode, message: str = "") -> tuple[Effect, ...]:
            return (
                Respond(
                    handle,
                    AddPartitionsResponse(
                        error, tuple((tp, error) for tp in sorted(req.partitions)), message
                    ),
                ),
            )

        meta, error, message = self._check_producer(
            req.transactional_id, req.producer_id, req.producer_epoch
        )
        if error is not None:
            return whole(error, message)
        if req.verify_only:
            # KIP-890: a partition leader asks before it accepts the producer's first batch.
            inside = meta.state == ONGOING and meta.pending is None
            return (
                Respond(
                    handle,
                    AddPartitionsResponse(
                        E.NONE,
                        tuple(
                            (
                                tp,
                                E.NONE if inside and tp in meta.partitions else E.INVALID_TXN_STATE,
                            )
                            for tp in sorted(req.partitions)
                        ),
                    ),
                ),
            )
        answer = AddPartitionsResponse(E.NONE, tuple((tp, E.NONE) for tp in sorted(req.partitions)))
        return self._add(handle, meta, req.partitions, "add", answer, now_ms, whole)

    def handle_add_offsets(
        self,
        handle: Hashable,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets_partition: TopicPartition,
        now_ms: int,
    ) -> tuple[Effect, ...]:
        """The group's `__consumer_offsets` partition joins the transaction (its offsets are
        committed by TxnOffsetCommit and made visible by the marker)."""

        def whole(error: ErrorCode, message: str = "") -> tuple[Effect, ...]:
            return (Respond(handle, TxnResponse(error, message)),)

        meta, error, message = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is not None:
            return whole(error, message)
        return self._add(
            handle,
            meta,
            frozenset({offsets_partition}),
            "offsets",
            TxnResponse(E.NONE),
            now_ms,
            whole,
        )

    def _add(
        self,
        handle,
        meta: TransactionMetadata,
        partitions: frozenset,
        kind: str,
        answer,
        now_ms: int,
        whole,
    ) -> tuple[Effect, ...]:
        if meta.pending is not None or meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return whole(E.CONCURRENT_TRANSACTIONS, self._busy(meta))
        if meta.state == ONGOING and partitions <= meta.partitions:
            return (Respond(handle, answer),)
        start = now_ms if meta.state in COMPLETED else meta.txn_start_ms
        value = meta.next_value(
            state=ONGOING,
            partitions=meta.partitions | partitions,
            txn_start_ms=start,
            last_update_ms=now_ms,
        )
        return self._write(meta, Transit(kind, value, meta.last_producer_epoch, handle, answer))

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int):
        """(metadata, error, message): the checks every producer request shares, in Kafka's
        order."""
        error = self._unavailable()
        if error is not None:
            return None, error, ""
        if not transactional_id:
            return None, E.INVALID_REQUEST, "the transactional id is empty"
        meta = self._txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return (
                None,
                E.INVALID_PRODUCER_ID_MAPPING,
                (
                    f"producer id {producer_id} is not the one of transactional id "
                    f"'{transactional_id}'; call InitProducerId"
                ),
            )
        if meta.producer_epoch != producer_epoch:
            return (
                None,
                E.PRODUCER_FENCED,
                (
                    f"epoch {producer_epoch} of producer {producer_id} is fenced: transactional id "
                    f"'{transactional_id}' is at epoch {meta.producer_epoch} (another instance "
                    "started, or the transaction timed out)"
                ),
            )
        return meta, None, ""

    @staticmethod
    def _busy(meta: TransactionMetadata) -> str:
        what = meta.pending.kind if meta.pending is not None else meta.state
        return (
            f"transactional id '{meta.transactional_id}' is busy ({what}): a previous "
            "transaction is still being completed; retry"
        )

    # -- EndTxn -----------------------------------------------------------------------------------
    def handle_end_txn(
        self, handle: Hashable, req: EndTxnRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        def answer(error: ErrorCode, message: str = "") -> tuple[Effect, ...]:
            return (Respond(handle, TxnResponse(error, message)),)

        meta, error, message = self._check_producer(
            req.transactional_id, req.producer_id, req.producer_epoch
        )
        if error is not None:
            return answer(error, message)
        if meta.pending is not None:
            return answer(E.CONCURRENT_TRANSACTIONS, self._busy(meta))
        if meta.state == ONGOING:
            value = meta.next_value(state=PREPARE[req.committed], last_update_ms=now_ms)
            return self._write(meta, Transit("end", value, meta.last_producer_epoch, handle))
        if meta.state == COMPLETE[req.committed]:
            return answer(E.NONE)  # a retry of what is done: as Kafka, success
        if meta.state == PREPARE[req.committed]:
            return answer(E.CONCURRENT_TRANSACTIONS, self._busy(meta))
        verb = "commit" if req.committed else "abort"
        return answer(
            E.INVALID_TXN_STATE,
            f"cannot {verb} transactional id '{req.transactional_id}' in state {meta.state}",
        )

    # -- markers ----------------------------------------------------------------------------------
    def _markers(self, meta: TransactionMetadata) -> SendMarkers:
        return SendMarkers(
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
            meta.state == PREPARE_COMMIT,
            self.coordinator_epoch,
            meta.partitions,
        )

    def on_markers_written(
        self, transactional_id: str, producer_id: int, producer_epoch: int, now_ms: int
    ) -> tuple[Effect, ...]:
        """Every partition of the decided transaction has its marker: write Complete*."""
        meta = self._txns.get(transactional_id)
        if (
            self.status != ACTIVE
            or meta is None
            or meta.pending is not None
            or meta.state not in (PREPARE_COMMIT, PREPARE_ABORT)
            or (meta.producer_id, meta.producer_epoch) != (producer_id, producer_epoch)
        ):
            return ()  # stale: the coordinator moved, or it was completed already
        self._retry_complete.pop(transactional_id, None)
        value = meta.next_value(
            state=COMPLETE[meta.state == PREPARE_COMMIT],
            partitions=frozenset(),
            last_update_ms=now_ms,
        )
        return self._write(meta, Transit("complete", value, meta.last_producer_epoch))

    # -- timers -----------------------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        if self.status != ACTIVE:
            return None
        return min([self._next_check_ms, *self._retry_complete.values()])

    def tick(self, now_ms: int) -> tuple[Effect, ...]:
        if self.status != ACTIVE:
            return ()
        out: list[Effect] = []
        for txn_id, due in list(self._retry_complete.items()):
            if due <= now_ms:
                del self._retry_complete[txn_id]
                meta = self._txns[txn_id]
                out += self.on_markers_written(
                    txn_id, meta.producer_id, meta.producer_epoch, now_ms
                )
        if now_ms >= self._next_check_ms:
            self._next_check_ms = now_ms + self.config.abort_timed_out_cleanup_interval_ms
            for meta in list(self._txns.values()):
                if meta.timed_out(now_ms):
                    out += self._fence(None, meta, now_ms)
                elif meta.expired(now_ms, self.config.transactional_id_expiration_ms):
                    out += self._write(meta, Transit("expire", None))
        return tuple(out)
