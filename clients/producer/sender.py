"""The producer's I/O driver: one trio task drains the accumulator, sends one ProduceRequest per
leader node (pipelined), completes batch results, retries retriable errors, refreshes metadata,
and for an idempotent producer gets (and bumps) its producer id and stamps batches with it; for
a transactional one adds each partition to the transaction before its first batch goes out."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

import trio

from clients import bridge
from clients.cluster import Cluster
from clients.errors import INVALID_METADATA, ErrorCode, KraftError
from clients.producer.accumulator import ProducerBatch, RecordAccumulator
from clients.producer.clock import now_ms
from clients.producer.future import fail_futures
from clients.producer.idempotence import IdempotenceManager
from clients.producer.produce_request import serialize_produce_request
from clients.producer.sender_idempotence import SenderIdempotence
from clients.producer.transactional import TransactionalDriver
from clients.record.codec import encode_batch
from clients.wire import broker_pb2

log = logging.getLogger(__name__)

# A topic reported unknown for this long fails its waiting records (auto-create is off);
# shorter than delivery_timeout so `kraft produce` to a typo fails fast.
UNKNOWN_TOPIC_TIMEOUT_MS = 1000
METADATA_MAX_AGE_MS = 300_000


class Sender(SenderIdempotence):
    def __init__(
        self,
        acc: RecordAccumulator,
        lock: threading.Lock,
        cluster: Cluster,
        *,
        acks: int,
        compression: int,
        request_timeout_ms: int,
        max_in_flight_per_node: int,
        retries: int,
        idempotence: IdempotenceManager | None = None,
        transactional: TransactionalDriver | None = None,
        memory_freed: Callable[[], None] = lambda: None,
    ) -> None:
        self.acc = acc
        self.lock = lock  # the accumulator's, shared with the threads that send
        self.memory_freed = memory_freed  # called (lock held) when batches leave the buffer
        self.cluster = cluster
        self.acks = acks
        self.compression = compression
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max(1, max_in_flight_per_node)
        self.retries = retries
        self.wake_requested = False  # set by user threads so they schedule one wake at a time
        self._event = trio.Event()
        self._sleep: trio.CancelScope | None = None  # the run loop's wait, while it waits
        self._in_flight: dict[int, int] = {}
        self._metadata_running = False
        self._metadata_wanted = True
        self._last_metadata_ms = 0
        self._unknown_since: dict[str, int] = {}
        self._nursery: trio.Nursery | None = None
        self.idempotence = idempotence  # None: batches carry no producer id
        self._init_running = False
        self._last_init_ms = 0
        self._init_error: KraftError | None = None  # a producer id cannot be had: fail batches
        # Transactions: the producer id comes from init_transactions, not from this loop.
        self.txn = transactional
        self._adding = False  # an AddPartitionsToTxn is out

    def wake(self) -> None:
        """Trio thread only: look at the accumulator again."""
        self._event.set()

    def wake_from_thread(self) -> None:
        """Trio thread, handed over from a sending thread (run_sync_soon): drain and issue now,
        in this callback, instead of waking the sender task to do it a scheduling round later;
        the sleeping loop only gets its deadline moved."""
        self.wake_requested = False
        sleep = self._sleep
        if sleep is None or self._nursery is None:
            self._event.set()  # the loop is between steps: it drains next anyway
            return
        try:
            wait_ms = self._step()
        except Exception:  # noqa: BLE001 - raised in a callback it would end trio's run
            log.exception("sender step failed in a wake-up; the sender task tries again")
            self._event.set()
            return
        if wait_ms == 0:
            self._event.set()
        else:
            sleep.deadline = math.inf if wait_ms is None else trio.current_time() + wait_ms / 1000

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                wait_ms = self._step()
                if wait_ms is None or wait_ms > 0:
                    with trio.move_on_after(
                        math.inf if wait_ms is None else wait_ms / 1000
                    ) as self._sleep:
                        await self._event.wait()
                    self._sleep = None
                self._event = trio.Event()
                await trio.lowlevel.checkpoint()

    def _step(self) -> int | None:
        """One pass: start requests for what is ready; returns ms until the next deadline."""
        now = now_ms()
        in_flight = self._in_flight
        limit = self.max_in_flight
        idem = self.idempotence
        # Without a producer id nothing is sent; drain still runs to expire what waits too long.
        ready = idem is None or idem.ready
        txn = None if self.txn is None else self.txn.core
        with self.lock:
            self.wake_requested = False
            if txn is not None and txn.dropping:
                self._drop_undrained_locked(txn)
            drained = self.acc.drain(
                now,
                self.cluster.metadata.leaders.get,
                lambda node: ready and in_flight.get(node, 0) < limit,
                None if idem is None else self._partition_limit,
                None if txn is None else txn.is_send_allowed,
            )
            for tp in drained.blocked:
                txn.maybe_add_partition(tp)
            if idem is not None:
                for batches in drained.requests.values():
                    for batch in batches:
                        if idem.stamp(batch):
                            batch.encoded = None  # stamped anew (a new epoch): encode again
                        idem.note_sent(batch)
            pending = self.acc.pending_topics()
            expired_pending = []
            for topic in pending:
                expired_pending += self.acc.fail_pending(topic, now)
            for batch in drained.expired:
                if idem is not None:
                    idem.on_failed(batch, None)  # sent before, its fate unknown
                self._fail_locked(
                    batch,
                    KraftError(
                        ErrorCode.REQUEST_TIMED_OUT,
                        f"expiring {len(batch.records)} record(s) for {batch.topic}-{batch.partition}: "
                        f"{now - batch.created_ms} ms passed since the batch was created "
                        f"(delivery_timeout_ms={self.acc.delivery_timeout_ms})",
                    ),
                )
        if expired_pending:
            fail_futures(
                expired_pending,
                KraftError(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"no metadata for the topic within delivery_timeout_ms={self.acc.delivery_timeout_ms}",
                ),
            )
        for node, batches in drained.requests.items():
            in_flight[node] = in_flight.get(node, 0) + 1
            # Issued here, not in the task: the bytes leave in this step instead of one
            # scheduling round later (linger_ms=0 latency).
            self._nursery.start_soon(self._produce, node, batches, self._issue(node, batches))
        next_ms = drained.next_ms
        if txn is not None:
            next_ms = self._maybe_add_partitions(now, next_ms)
        elif idem is not None:
            next_ms = self._maybe_init_producer_id(now, next_ms)
        if drained.unknown or pending:
            self._metadata_wanted = True
        if self._metadata_wanted or now - self._last_metadata_ms >= METADATA_MAX_AGE_MS:
            backoff_until = self._last_metadata_ms + self.acc.retry_backoff_ms
            if not self._metadata_running and now >= backoff_until:
                self._metadata_running = True
                self._metadata_wanted = False
                self._nursery.start_soon(self._refresh_metadata)
            elif not self._metadata_running:
                next_ms = backoff_until if next_ms is None else min(next_ms, backoff_until)
        if next_ms is None:
            return None
        return max(0, next_ms - now)

    def _partition_limit(self, tp: tuple) -> int:
        """Idempotence: several requests of a partition out at once only once its leader knows
        this producer's epoch (see idempotence.py)."""
        return self.acc.max_in_flight if self.idempotence.pipelined(tp) else 1

    # --- metadata -------------------------------------------------------------------------

    async def _refresh_metadata(self) -> None:
        try:
            with self.lock:
                topics = sorted(self.acc.known_topics())
            if topics:
                resp = await self.cluster.refresh(topics, allow_auto_create=True)
                self._apply_metadata(resp)
        except KraftError as exc:
            log.debug("metadata refresh failed: %s", exc)
            self._metadata_wanted = True
        finally:
            self._last_metadata_ms = now_ms()
            self._metadata_running = False
            self.wake()

    def _apply_metadata(self, resp: broker_pb2.MetadataResponse) -> None:
        now = now_ms()
        failed: list[tuple[list, KraftError]] = []
        with self.lock:
            for t in resp.topics:
                if t.error_code == 0 and t.partitions:
                    self._unknown_since.pop(t.name, None)
                    n = max(p.partition for p in t.partitions) + 1
                    bad = self.acc.set_num_partitions(t.name, n)
                    if bad:
                        failed.append(
                            (
                                bad,
                                KraftError(
                                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"topic '{t.name}' has {n} partitions (0..{n - 1}); add more with: "
                                    f"kraft topic alter {t.name} --partitions N",
                                ),
                            )
                        )
                    continue
                code = t.error_code or ErrorCode.LEADER_NOT_AVAILABLE
                err = KraftError(code, t.error_message)
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    since = self._unknown_since.setdefault(t.name, now)
                    if now - since >= min(UNKNOWN_TOPIC_TIMEOUT_MS, self.acc.delivery_timeout_ms):
                        err = KraftError(
                            code,
                            f"topic '{t.name}' does not exist; create it with: "
                            f"kraft topic create {t.name}",
                        )
                        failed.append((self.acc.fail_pending(t.name), err))
                        self._unknown_since.pop(t.name, None)
                    else:
                        self._metadata_wanted = True
                elif not err.retriable:
                    failed.append((self.acc.fail_pending(t.name), err))
                else:
                    self._metadata_wanted = True
        for futures, err in failed:
            fail_futures(futures, err)

    # --- produce ----------------------------------------------------------------------------

    def _issue(self, node: int, batches: list[ProducerBatch]) -> bridge.PendingCall | KraftError:
        """Encode and send the ProduceRequest now; a failure is returned for `_produce`."""
        try:
            request = self._build_request(batches)
            stub = self.cluster.broker_stub(node)
            return bridge.start(stub.Produce, request, self.request_timeout_ms / 1000)
        except KraftError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - surface anything to the futures
            return KraftError(ErrorCode.UNKNOWN_SERVER_ERROR, repr(exc))

    async def _produce(
        self, node: int, batches: list[ProducerBatch], pending: bridge.PendingCall | KraftError
    ) -> None:
        try:
            if isinstance(pending, KraftError):
                self._handle_failed_request(batches, pending)
                return
            try:
                resp = await bridge.finish(pending)
            except KraftError as exc:
                self._handle_failed_request(batches, exc)
                return
            except Exception as exc:  # noqa: BLE001 - surface anything to the futures
                self._handle_failed_request(
                    batches, KraftError(ErrorCode.UNKNOWN_SERVER_ERROR, repr(exc))
                )
                return
            self._handle_response(batches, resp)
        finally:
            self._in_flight[node] -= 1
            self.wake()

    def _build_request(self, batches: list[ProducerBatch]) -> bytes:
        """The serialized ProduceRequest (the broker stub's Produce takes bytes as they are)."""
        by_tp: dict[tuple, list[bytes]] = {}
        for b in batches:
            if b.encoded is None:
                b.encoded = encode_batch(
                    b.records,
                    compression=self.compression,
                    producer_id=b.producer_id,
                    producer_epoch=b.producer_epoch,
                    base_sequence=b.base_sequence,
                    is_transactional=self.txn is not None,
                )
            by_tp.setdefault((b.topic, b.partition), []).append(b.encoded)
        topics: dict[str, list] = {}
        for (topic, partition), chunks in by_tp.items():
            topics.setdefault(topic, []).append((partition, chunks))
        return serialize_produce_request(
            self.acks,
            self.request_timeout_ms,
            topics,
            self.txn.core.transactional_id if self.txn is not None else "",
        )

    def _handle_response(self, batches: list[ProducerBatch], resp) -> None:
        answers = {}
        for t in resp.topics:
            for p in t.partitions:
                answers[(t.name, p.partition)] = p
        now = now_ms()
        with self.lock:
            self.acc.request_done(batches)
            offsets: dict[tuple, int] = {}
            for b in batches:
                tp = (b.topic, b.partition)
                p = answers.get(tp)
                if self.acks == 0:
                    self._succeed_locked(b, -1, -1)
                elif p is None:
                    self._fail_locked(
                        b,
                        KraftError(
                            ErrorCode.UNKNOWN_SERVER_ERROR,
                            f"no answer for {tp[0]}-{tp[1]} in the produce response",
                        ),
                    )
                elif p.error_code in (0, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    # Several batches of one partition were appended together: offsets are dense.
                    # A duplicate (a retry the leader had appended) carries the original offset.
                    base = offsets.get(tp, p.base_offset)
                    offsets[tp] = base + len(b.records)
                    self._succeed_locked(b, base, p.log_append_time_ms)
                else:
                    self._retry_or_fail_locked(
                        b, KraftError(p.error_code, p.error_message), now, p.error_code, batches
                    )
            self.memory_freed()

    def _handle_failed_request(self, batches: list[ProducerBatch], exc: KraftError) -> None:
        now = now_ms()
        with self.lock:
            self.acc.request_done(batches)
            for b in batches:
                self._retry_or_fail_locked(b, exc, now, None, batches)
            self.memory_freed()

    def _retry_or_fail_locked(
        self,
        b: ProducerBatch,
        exc: KraftError,
        now: int,
        leader_code: int | None = None,
        siblings=(),
    ) -> None:
        """`leader_code`: the leader's error for this batch; None when the request itself
        failed. `siblings`: the batches of its request."""
        if exc.code in INVALID_METADATA:
            self.cluster.metadata.invalidate_leader((b.topic, b.partition))
            self._metadata_wanted = True
        idem = self.idempotence
        if (
            idem is not None
            and leader_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            and idem.retry_out_of_order(b)
            and not self.acc.expired(b, now)
        ):
            # An earlier batch of the partition has not landed yet (requests of one partition
            # may arrive in either order): send this one again right after it.
            log.debug("resending %r after the earlier batches of its partition", b)
            self.acc.reenqueue(b, now, backoff=False)
            return
        if idem is not None:
            idem.on_attempt_failed(b, leader_code)
        if exc.retriable and b.attempts < self.retries and not self.acc.expired(b, now):
            log.debug("retrying %r after %s", b, exc)
            self.acc.reenqueue(b, now)
        else:
            if not exc.message.startswith(b.topic):
                exc = KraftError(exc.code, f"{b.topic}-{b.partition}: {exc.message}")
            if idem is not None:
                idem.on_failed(b, leader_code, siblings)
            self._fail_locked(b, exc)

    def _succeed_locked(self, b: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        if self.idempotence is not None:
            self.idempotence.on_succeeded(b)
        self.acc.finished(b)
        b.records = []
        b.encoded = None
        b.result.complete(base_offset, log_append_time)

    def _fail_locked(self, b: ProducerBatch, exc: KraftError) -> None:
        if self.txn is not None:
            self.txn.core.on_batch_failed(exc)
        self.acc.finished(b)
        b.records = []
        b.encoded = None
        b.result.complete(-1, -1, exc)

    def abort(self, exc: KraftError) -> None:
        """Fail everything not yet acknowledged (a close that could not flush)."""
        with self.lock:
            batches, futures = self.acc.abort_all()
            for b in batches:
                b.result.complete(-1, -1, exc)
            self.memory_freed()
        fail_futures(futures, exc)
