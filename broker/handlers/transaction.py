"""The transactional producer's requests and the transaction admin calls, wire-neutral: ACLs as
Kafka's (Write on the transactional id, Write on each topic added, Read on the group whose
offsets are added, Describe to list or describe; KIP-890's verify_only from nodes only), the
request checks, and the coordinator core of the id's `__transaction_state` partition
(NOT_COORDINATOR when it is not this broker's). Messages in every answer are final."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.edge.request_limits import Refused
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.transaction import messages as m
from broker.transaction import request_checks as checks
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.driver import TransactionDriver
from broker.transaction.hints import message
from clients.errors import ErrorCode
from clients.grpc_server import ANONYMOUS, RequestContext
from clients.types import TopicPartition
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

E = ErrorCode
WRITE_TIMEOUT_S = 30.0  # a request that appends waits at most this for its record
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    partitions: tuple[PartitionResult, ...] = ()
    error_code: int = 0  # a whole-request error (NOT_COORDINATOR, ...)
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class TxnResult:
    """AddOffsetsToTxn's and EndTxn's answer."""

    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    """`transaction`: what the coordinator describes (None when refused: state Dead)."""

    transactional_id: str
    error_code: int = 0
    error_message: str = ""
    transaction: m.DescribedTransaction | None = None


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    state_filters: tuple[str, ...] = ()  # (): every state
    producer_id_filters: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    transactions: tuple[ListedTransaction, ...] = ()
    error_code: int = 0
    error_message: str = ""


def _add_partitions_answer(answer: m.AddPartitionsResponse) -> AddPartitionsToTxnResponse:
    return AddPartitionsToTxnResponse(
        tuple(
            PartitionResult(tp.topic, tp.partition, e, message(e)) for tp, e in answer.partitions
        ),
        answer.error,
        message(answer.error, answer.message),
    )


class TransactionHandler:
    def __init__(
        self,
        coordinators: TransactionCoordinators,
        offsets_partition_for: Callable[[str], int],
        *,
        authorizer: RequestAuthorizer = OPEN,
    ) -> None:
        """`offsets_partition_for(group_id)`: the group's `__consumer_offsets` partition."""
        self.coordinators = coordinators
        self.offsets_partition_for = offsets_partition_for
        self.authz = authorizer

    def _driver(self, transactional_id: str) -> TransactionDriver | None:
        return self.coordinators.driver_for(transactional_id)

    async def _ask(self, transactional_id: str, call, fallback):
        """The core's answer (`call(core, handle, now_ms)`); `fallback` with NOT_COORDINATOR when
        this broker does not coordinate the id, or as it is when the driver stops first."""
        driver = self._driver(transactional_id)
        if driver is None:
            return type(fallback)(
                E.NOT_COORDINATOR, message=f"transactional id '{transactional_id}'"
            )
        return await driver.ask(
            lambda handle, now: call(driver.core, handle, now), fallback, WRITE_TIMEOUT_S
        )

    async def verify_locally(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: frozenset
    ) -> dict[TopicPartition, ErrorCode] | None:
        """KIP-890 for this broker's own partitions: verify_only's answer per partition, asked
        of the local coordinator without the node check (the caller is this broker); None when
        another broker coordinates the id (broker/transaction/verification.py asks it)."""
        if self._driver(transactional_id) is None:
            return None
        req = m.AddPartitionsRequest(
            transactional_id, producer_id, producer_epoch, frozenset(partitions), verify_only=True
        )
        answer = await self._ask(
            transactional_id,
            lambda core, h, now: core.handle_add_partitions(h, req, now),
            m.AddPartitionsResponse(E.REQUEST_TIMED_OUT),
        )
        if answer.error:
            return dict.fromkeys(partitions, answer.error)
        return dict(answer.partitions)

    # -- the producer's calls ---------------------------------------------------------------------
    async def add_partitions_to_txn(
        self, req: m.AddPartitionsRequest, who: RequestContext = ANONYMOUS
    ) -> AddPartitionsToTxnResponse:
        try:
            checks.AddPartitionsToTxn(req)
        except Refused as refused:
            return AddPartitionsToTxnResponse((), refused.code, refused.message)
        denial = (
            self.authz.node_call_denial(who)
            if req.verify_only
            else self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id, who)
        )
        if denial is not None:
            return _add_partitions_answer(
                m.AddPartitionsResponse(
                    E(denial[0]),
                    tuple((tp, E(denial[0])) for tp in sorted(req.partitions)),
                    denial[1],
                )
            )
        # verify_only comes from the partition's leader, which checked the producer's Write on
        # the topic itself; a node need not have Write on every topic (Kafka skips it too).
        refused = (
            {}
            if req.verify_only
            else {
                tp: E.TOPIC_AUTHORIZATION_FAILED
                for tp in req.partitions
                if not self.authz.allowed(Op.WRITE, R.TOPIC, tp.topic, who)
            }
        )
        if not refused:
            refused = {
                tp: E.UNKNOWN_TOPIC_OR_PARTITION
                for tp in req.partitions
                if not self.coordinators.partition_exists(tp)
            }
        if refused:
            # Kafka: nothing is added when any partition is refused (not allowed, or not there);
            # the others were not attempted.
            return _add_partitions_answer(
                m.AddPartitionsResponse(
                    E.NONE,
                    tuple(
                        (tp, refused.get(tp, E.OPERATION_NOT_ATTEMPTED))
                        for tp in sorted(req.partitions)
                    ),
                )
            )
        return _add_partitions_answer(
            await self._ask(
                req.transactional_id,
                lambda core, h, now: core.handle_add_partitions(h, req, now),
                m.AddPartitionsResponse(E.REQUEST_TIMED_OUT),
            )
        )

    async def add_offsets_to_txn(
        self, req: AddOffsetsToTxnRequest, who: RequestContext = ANONYMOUS
    ) -> TxnResult:
        try:
            checks.AddOffsetsToTxn(req)
        except Refused as refused:
            return TxnResult(refused.code, refused.message)
        denial = self.authz.denial(
            Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id, who
        ) or self.authz.denial(Op.READ, R.GROUP, req.group_id, who)
        if denial is not None:
            return TxnResult(*denial)
        tp = TopicPartition(OFFSETS_TOPIC, self.offsets_partition_for(req.group_id))
        answer = await self._ask(
            req.transactional_id,
            lambda core, h, now: core.handle_add_offsets(
                h, req.transactional_id, req.producer_id, req.producer_epoch, tp, now
            ),
            m.TxnResponse(E.REQUEST_TIMED_OUT),
        )
        return TxnResult(answer.error, message(answer.error, answer.message))

    async def end_txn(self, req: m.EndTxnRequest, who: RequestContext = ANONYMOUS) -> TxnResult:
        try:
            checks.EndTxn(req)
        except Refused as refused:
            return TxnResult(refused.code, refused.message)
        denial = self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id, who)
        if denial is not None:
            return TxnResult(*denial)
        answer = await self._ask(
            req.transactional_id,
            lambda core, h, now: core.handle_end_txn(h, req, now),
            m.TxnResponse(E.REQUEST_TIMED_OUT),
        )
        return TxnResult(answer.error, message(answer.error, answer.message))

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        new_producer_id: Callable[[], Awaitable[int]],
    ) -> m.InitProducerIdResponse:
        """InitProducerId with a transactional id (broker/handlers/init_producer_id.py routes it
        here, after its ACL check). `new_producer_id()` awaits a fresh id, asked only when the
        core needs one."""
        driver = self._driver(transactional_id)
        if driver is None:
            return m.InitProducerIdResponse(
                E.NOT_COORDINATOR,
                message=message(E.NOT_COORDINATOR, f"transactional id '{transactional_id}'"),
            )
        fresh = await new_producer_id() if driver.core.needs_producer_id(transactional_id) else None
        req = m.InitProducerIdRequest(transactional_id, timeout_ms, producer_id, producer_epoch)
        return await driver.ask(
            lambda handle, now: driver.core.handle_init_producer_id(handle, req, now, fresh),
            m.InitProducerIdResponse(E.REQUEST_TIMED_OUT),
            WRITE_TIMEOUT_S,
        )

    # -- admin --------------------------------------------------------------------------------------
    def describe_transactions(
        self, req: DescribeTransactionsRequest, who: RequestContext = ANONYMOUS
    ) -> tuple[DescribedTransaction, ...]:
        """Synchronous: each core describes from its state. Answered per id."""
        out = []
        for txn_id in req.transactional_ids:
            try:
                checks.check_transactional_id(txn_id, "transactional_ids")
            except Refused as refused:
                out.append(DescribedTransaction(txn_id, refused.code, refused.message))
                continue
            denial = self.authz.denial(Op.DESCRIBE, R.TRANSACTIONAL_ID, txn_id, who)
            driver = self._driver(txn_id)
            if denial is not None:
                out.append(DescribedTransaction(txn_id, *denial))
                continue
            d = (
                m.DescribedTransaction(txn_id, E.NOT_COORDINATOR)
                if driver is None
                else driver.core.describe(txn_id)
            )
            out.append(
                DescribedTransaction(
                    txn_id,
                    d.error,
                    message(d.error, f"transactional id '{txn_id}'" if d.error else ""),
                    d,
                )
            )
        return tuple(out)

    def list_transactions(
        self, req: ListTransactionsRequest, who: RequestContext = ANONYMOUS
    ) -> ListTransactionsResponse:
        """The ids this broker coordinates that the caller may Describe; an admin asks every
        broker. Synchronous."""
        try:
            checks.ListTransactions(req)
        except Refused as refused:
            return ListTransactionsResponse((), refused.code, refused.message)
        states, pids = frozenset(req.state_filters), frozenset(req.producer_id_filters)
        out = []
        for driver in self.coordinators.drivers():
            error, listed = driver.core.list_transactions(states, pids)
            if error:  # still loading: say so rather than list too few
                return ListTransactionsResponse((), error, message(error))
            out.extend(
                ListedTransaction(txn_id, pid, state)
                for txn_id, pid, state in listed
                if self.authz.allowed(Op.DESCRIBE, R.TRANSACTIONAL_ID, txn_id, who)
            )
        return ListTransactionsResponse(tuple(sorted(out, key=lambda t: t.transactional_id)))
