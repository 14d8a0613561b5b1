"""The transactional producer's requests (the I/O around transaction.py's core): InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn to the transaction coordinator (FindCoordinator key
type 1), TxnOffsetCommit to the group's coordinator; retries while the coordinator moves, loads
or is busy (CONCURRENT_TRANSACTIONS), every other error handed to the core."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable

import trio

from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError, error_name
from clients.group_rpc import (
    TRANSACTION_KEY,
    CoordinatorClient,
    broker_stub,
    group_stub,
    transaction_stub,
)
from clients.producer.idempotence import IdempotenceManager
from clients.producer.transaction import (
    ABORTABLE,
    COMMITTING,
    COORDINATOR_MOVED,
    FATAL,
    PARTITION_RETRY,
    RETRY,
    TransactionManager,
    error_kind,
)
from clients.types import ConsumerGroupMetadata
from clients.wire import broker_pb2, group_pb2, transaction_pb2

log = logging.getLogger(__name__)
E = ErrorCode


def _deadline(timeout: float | None) -> float:
    return math.inf if timeout is None else time.monotonic() + timeout


async def _until(deadline: float, wait: Callable[[], Awaitable[None]], what: str) -> None:
    """`wait()` until `deadline` (time.monotonic); then REQUEST_TIMED_OUT, state unchanged."""
    with trio.move_on_at(trio.current_time() + (deadline - time.monotonic())) as scope:
        await wait()
    if scope.cancelled_caught:
        raise KraftError(
            E.REQUEST_TIMED_OUT, f"{what} did not finish in time; call it again to go on"
        )


def _first_error(resp) -> tuple[int, str]:
    """A whole-response error, else the first partition's (TxnOffsetCommit answers per
    partition)."""
    if resp.error_code:
        return resp.error_code, resp.error_message
    for p in getattr(resp, "partitions", ()):
        if p.error_code:
            return p.error_code, f"{p.topic}-{p.partition}: {p.error_message}"
    return 0, ""


# AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS (the last transaction still completing)
# is retried after this long instead of retry_backoff_ms: Kafka's ADD_PARTITIONS_RETRY_BACKOFF_MS.
CONCURRENT_RETRY_MS = 20


class TransactionalDriver:
    def __init__(
        self,
        cluster: Cluster,
        core: TransactionManager,
        idempotence: IdempotenceManager,
        lock: threading.Lock,
        *,
        retry_backoff_ms: int,
    ) -> None:
        self.cluster = cluster
        self.core = core
        self.idempotence = idempotence
        self.lock = lock  # the accumulator's: the sender reads the core under it
        self.backoff_s = retry_backoff_ms / 1000
        self.coordinator = CoordinatorClient(cluster, core.transactional_id, TRANSACTION_KEY)
        self.add_retry_at_ms = 0  # AddPartitionsToTxn waits until then after a retriable error
        self._add_done: trio.Event | None = None  # set when the AddPartitionsToTxn out ends

    # -- one request, retried ------------------------------------------------------------------
    async def _request(
        self,
        client: CoordinatorClient,
        method: str,
        request,
        stub_of,
        deadline: float,
        otherwise: str,
        retry=frozenset(),
    ):
        """`method` until it succeeds; retriable errors until `deadline` (then REQUEST_TIMED_OUT,
        the state unchanged: the call may be made again); any other error goes to the core
        (abortable or fatal, `otherwise` for codes with no rule) and is raised."""
        what = f"{method} for transactional id '{self.core.transactional_id}'"
        while True:
            left = deadline - time.monotonic()
            try:
                with trio.fail_after(max(left, 0.001)):
                    resp = await client.call(
                        method, request, min(left, self.cluster.timeout), stub_of=stub_of
                    )
                code, message = _first_error(resp)
            except trio.TooSlowError:
                code, message = E.REQUEST_TIMED_OUT, "no answer in time"
            except KraftError as exc:
                code, message = exc.code, exc.message
            if code == E.NONE:
                return resp
            kind = RETRY if code in retry else error_kind(code, otherwise)
            if kind == COORDINATOR_MOVED:
                client.invalidate()
            if kind not in (RETRY, COORDINATOR_MOVED):
                error = KraftError(code, f"{what}: {message or error_name(code)}")
                with self.lock:
                    self.core.fail(kind, error)
                raise error
            if time.monotonic() + self.backoff_s >= deadline:
                raise KraftError(
                    E.REQUEST_TIMED_OUT,
                    f"{what} did not succeed in time (last: "
                    f"{error_name(code)} {message}); call it again to go on",
                )
            log.debug("%s: %s %s; retrying", what, error_name(code), message)
            await trio.sleep(self.backoff_s)

    def _ids(self) -> dict:
        idem = self.idempotence
        return dict(
            transactional_id=self.core.transactional_id,
            producer_id=idem.producer_id,
            producer_epoch=idem.epoch,
        )

    # -- the producer's calls ---------------------------------------------------------------------
    async def init_transactions(self, timeout: float | None) -> None:
        with self.lock:
            self.core.begin_init()
        await self._init_producer_id(_deadline(timeout))

    async def _init_producer_id(self, deadline: float) -> None:
        with self.lock:
            producer_id, epoch = self.idempotence.init_request()
        request = broker_pb2.InitProducerIdRequest(
            transactional_id=self.core.transactional_id,
            transaction_timeout_ms=self.core.transaction_timeout_ms,
        )
        if producer_id is not None:  # a new epoch of the same id (after an abort)
            request.producer_id, request.producer_epoch = producer_id, epoch
        resp = await self._request(
            self.coordinator, "InitProducerId", request, broker_stub, deadline, FATAL
        )
        with self.lock:
            self.idempotence.set_producer(resp.producer_id, resp.producer_epoch)
            self.core.initialized()
        log.info(
            "transactional id %s: producer id %d epoch %d",
            self.core.transactional_id,
            resp.producer_id,
            resp.producer_epoch,
        )

    async def send_offsets(
        self, offsets: dict, group: ConsumerGroupMetadata, timeout: float | None
    ) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group's."""
        if not isinstance(group, ConsumerGroupMetadata):
            raise TypeError(
                "send_offsets_to_transaction needs the consumer's "
                "group_metadata(), a ConsumerGroupMetadata"
            )
        with self.lock:
            self.core.check_in_transaction("send_offsets_to_transaction")
        deadline = _deadline(timeout)
        await self._request(
            self.coordinator,
            "AddOffsetsToTxn",
            transaction_pb2.AddOffsetsToTxnRequest(group_id=group.group_id, **self._ids()),
            transaction_stub,
            deadline,
            ABORTABLE,
        )
        with self.lock:
            self.core.offsets_added = True
        request = group_pb2.TxnOffsetCommitRequest(
            group_id=group.group_id,
            generation_id=group.generation_id,
            member_id=group.member_id,
            group_instance_id=group.group_instance_id,
            partitions=[
                group_pb2.CommitPartition(
                    topic=tp[0], partition=tp[1], offset=offset, leader_epoch=-1
                )
                for tp, offset in sorted(offsets.items())
            ],
            **self._ids(),
        )
        await self._request(
            CoordinatorClient(self.cluster, group.group_id),
            "TxnOffsetCommit",
            request,
            group_stub,
            deadline,
            ABORTABLE,
            retry=PARTITION_RETRY,
        )

    async def commit(self, flush: Callable[[], Awaitable[None]], timeout: float | None) -> None:
        with self.lock:
            self.core.begin_commit()
        deadline = _deadline(timeout)
        await _until(deadline, flush, "commit_transaction: acknowledging the records")
        with self.lock:
            if self.core.state != COMMITTING:  # a batch failed: abortable (or fatal)
                self.core.begin_commit()  # raises why
        await self._end(True, deadline)

    async def abort(
        self, wait_in_flight: Callable[[], Awaitable[None]], timeout: float | None
    ) -> None:
        """Unsent batches are dropped (the sender sees the state), those out are waited for,
        then EndTxn abort; a new epoch if a batch's fate is unknown."""
        with self.lock:
            self.core.begin_abort()
        deadline = _deadline(timeout)
        await _until(deadline, wait_in_flight, "abort_transaction: the requests still out")
        await self._end(False, deadline)

    async def _end(self, committed: bool, deadline: float) -> None:
        # An AddPartitionsToTxn still out may yet add a partition: EndTxn must know of it, or
        # the coordinator would carry it into the next transaction.
        while self._add_done is not None:
            await _until(deadline, self._add_done.wait, "AddPartitionsToTxn")
        if self.core.needs_end_txn():
            await self._request(
                self.coordinator,
                "EndTxn",
                transaction_pb2.EndTxnRequest(committed=committed, **self._ids()),
                transaction_stub,
                deadline,
                FATAL,
            )
        with self.lock:
            bump = not committed and not self.idempotence.ready
            if bump:
                self.core.reinitialize()
            else:
                self.core.completed()
        if bump:
            await self._init_producer_id(deadline)

    # -- the sender's AddPartitionsToTxn --------------------------------------------------------
    async def add_partitions(self, partitions: list[tuple]) -> None:
        """Add `partitions` to the transaction; the core learns each one's fate."""
        topics: dict[str, list[int]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(partition)
        request = transaction_pb2.AddPartitionsToTxnRequest(
            topics=[transaction_pb2.TxnTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            **self._ids(),
        )
        done = self._add_done = trio.Event()
        try:
            errors = await self._ask_add_partitions(request, partitions)
            with self.lock:
                kind = self.core.on_add_partitions_result({tp: c for tp, (c, _) in errors.items()})
                if kind in (ABORTABLE, FATAL):
                    tp, (code, message) = next(
                        (tp, e)
                        for tp, e in sorted(errors.items())
                        if e[0] and error_kind(e[0], ABORTABLE) == kind
                    )
                    self.core.fail(
                        kind,
                        KraftError(
                            code,
                            f"AddPartitionsToTxn {tp[0]}-{tp[1]}: {message or error_name(code)}",
                        ),
                    )
        finally:
            self._add_done = None
            done.set()
        if kind == COORDINATOR_MOVED:
            self.coordinator.invalidate()
        if kind is not None:
            # The previous transaction's markers are still being written: that takes a few
            # milliseconds, so retry soon, as Kafka's producer does (its 20 ms for this case).
            concurrent = all(
                code in (E.NONE, E.CONCURRENT_TRANSACTIONS) for code, _ in errors.values()
            )
            backoff_ms = (
                min(CONCURRENT_RETRY_MS, int(self.backoff_s * 1000))
                if concurrent
                else int(self.backoff_s * 1000)
            )
            self.add_retry_at_ms = int(time.time() * 1000) + backoff_ms

    async def _ask_add_partitions(self, request, partitions: list[tuple]) -> dict:
        """Each partition's (error code, message); a failed call is every partition's error."""
        try:
            resp = await self.coordinator.call(
                "AddPartitionsToTxn", request, stub_of=transaction_stub
            )
            if resp.error_code:
                errors = {tp: (resp.error_code, resp.error_message) for tp in partitions}
            else:
                errors = {
                    (p.topic, p.partition): (p.error_code, p.error_message) for p in resp.partitions
                }
        except KraftError as exc:
            errors = {tp: (exc.code, exc.message) for tp in partitions}
        except Exception as exc:  # noqa: BLE001 - raised in the sender's nursery it would end it
            errors = {tp: (E.UNKNOWN_SERVER_ERROR, repr(exc)) for tp in partitions}
        for tp in partitions:
            errors.setdefault(tp, (E.UNKNOWN_SERVER_ERROR, "the answer left it out"))
        return errors
