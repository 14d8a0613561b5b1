"""InitProducerId, wire-neutral: an idempotent producer's id (from this broker's block of ids) or,
with a transactional id, the answer of that id's transaction coordinator (fencing older epochs)."""

from __future__ import annotations

from dataclasses import dataclass

from broker.edge.request_limits import (
    INT16_MAX,
    MAX_NAME_LENGTH,
    Refused,
    check_length,
    check_range,
)
from broker.handlers.transaction import TransactionHandler
from broker.idempotence.producer_ids import ProducerIdBlocks, init_producer_id
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.transaction.hints import message as txn_message
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import ANONYMOUS, RequestContext
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str = ""  # "": an idempotent producer
    transaction_timeout_ms: int = 0
    producer_id: int | None = None  # the producer's current id and epoch, to bump it
    producer_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: int = 0
    error_message: str = ""
    producer_id: int = -1
    producer_epoch: int = -1


def check(request: InitProducerIdRequest) -> None:
    check_length("transactional_id", request.transactional_id, MAX_NAME_LENGTH)
    if request.producer_id is not None:
        check_range("producer_id", request.producer_id, -1, (1 << 63) - 1, hint="-1 for a new id")
    if request.producer_epoch is not None:
        # Kafka's producer epoch is an int16.
        check_range(
            "producer_epoch",
            request.producer_epoch,
            -1,
            INT16_MAX,
            hint="the epoch the broker handed out",
        )


class InitProducerIdHandler:
    def __init__(
        self,
        producer_ids: ProducerIdBlocks | None,
        *,
        authorizer: RequestAuthorizer = OPEN,
        transactions: TransactionHandler | None = None,
    ) -> None:
        """`transactions` answers a request with a transactional id (none: refused)."""
        self.producer_ids = producer_ids
        self.authz = authorizer
        self.transactions = transactions

    async def handle(
        self, request: InitProducerIdRequest, who: RequestContext = ANONYMOUS
    ) -> InitProducerIdResponse:
        try:
            check(request)
        except Refused as refused:
            return InitProducerIdResponse(refused.code, refused.message)
        authz = self.authz
        if request.transactional_id:
            denial = authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id, who)
        elif authz.allowed(Op.IDEMPOTENT_WRITE, R.CLUSTER, who=who) or authz.allowed_any(
            Op.WRITE, R.TOPIC, who
        ):
            denial = None  # Kafka: IdempotentWrite on the cluster, or Write on any topic
        else:
            denial = authz.denial(Op.IDEMPOTENT_WRITE, R.CLUSTER, who=who)
        if denial is not None:
            return InitProducerIdResponse(*denial)
        if request.transactional_id:
            return await self._init_transactional(request)
        try:
            pid, epoch = await init_producer_id(
                self.producer_ids, request.producer_id, request.producer_epoch
            )
        except KraftError as exc:
            return InitProducerIdResponse(exc.code, exc.message)
        return InitProducerIdResponse(producer_id=pid, producer_epoch=epoch)

    async def _init_transactional(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """To the transaction coordinator of the id (NOT_COORDINATOR if it is not this broker)."""
        if self.transactions is None:
            return InitProducerIdResponse(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, "this node coordinates no transactions"
            )

        async def new_producer_id() -> int:
            return (await init_producer_id(self.producer_ids, None, None))[0]

        try:
            answer = await self.transactions.init_producer_id(
                request.transactional_id,
                request.transaction_timeout_ms,
                -1 if request.producer_id is None else request.producer_id,
                -1 if request.producer_epoch is None else request.producer_epoch,
                new_producer_id,
            )
        except KraftError as exc:  # no producer id block from the controller right now
            return InitProducerIdResponse(exc.code, exc.message)
        return InitProducerIdResponse(
            answer.error,
            txn_message(answer.error, answer.message),
            answer.producer_id,
            answer.producer_epoch,
        )
