"""The Transaction gRPC service: protobuf in and out at this edge (broker/services/transaction_wire.py),
translated to and from the wire-neutral transaction handler (broker/handlers/transaction.py),
which decides: ACLs, request checks, and the coordinator core of the id's `__transaction_state`
partition (NOT_COORDINATOR when it is not this broker's)."""

from __future__ import annotations

from collections.abc import Callable

from broker.handlers import transaction as t
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.services.transaction_wire import add_partitions_request, end_txn_request, txn_topics
from broker.transaction.coordinator_registry import TransactionCoordinators
from clients.grpc_server import request_context
from clients.wire import transaction_pb2 as pb


class TransactionServicer:
    def __init__(
        self,
        coordinators: TransactionCoordinators,
        offsets_partition_for: Callable[[str], int],
        authorizer: RequestAuthorizer = OPEN,
    ) -> None:
        """`offsets_partition_for(group_id)`: the group's `__consumer_offsets` partition."""
        self.handler = t.TransactionHandler(
            coordinators, offsets_partition_for, authorizer=authorizer
        )

    async def AddPartitionsToTxn(
        self, request: pb.AddPartitionsToTxnRequest
    ) -> pb.AddPartitionsToTxnResponse:
        r = await self.handler.add_partitions_to_txn(
            add_partitions_request(request), request_context()
        )
        return pb.AddPartitionsToTxnResponse(
            error_code=r.error_code,
            error_message=r.error_message,
            partitions=[
                pb.TxnPartitionResult(
                    topic=p.topic,
                    partition=p.partition,
                    error_code=p.error_code,
                    error_message=p.error_message,
                )
                for p in r.partitions
            ],
        )

    async def AddOffsetsToTxn(
        self, request: pb.AddOffsetsToTxnRequest
    ) -> pb.AddOffsetsToTxnResponse:
        r = await self.handler.add_offsets_to_txn(
            t.AddOffsetsToTxnRequest(
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                request.group_id,
            ),
            request_context(),
        )
        return pb.AddOffsetsToTxnResponse(error_code=r.error_code, error_message=r.error_message)

    async def EndTxn(self, request: pb.EndTxnRequest) -> pb.EndTxnResponse:
        r = await self.handler.end_txn(end_txn_request(request), request_context())
        return pb.EndTxnResponse(error_code=r.error_code, error_message=r.error_message)

    async def DescribeTransactions(
        self, request: pb.DescribeTransactionsRequest
    ) -> pb.DescribeTransactionsResponse:
        described = self.handler.describe_transactions(
            t.DescribeTransactionsRequest(tuple(request.transactional_ids)), request_context()
        )
        return pb.DescribeTransactionsResponse(transactions=[_described(d) for d in described])

    async def ListTransactions(
        self, request: pb.ListTransactionsRequest
    ) -> pb.ListTransactionsResponse:
        r = self.handler.list_transactions(
            t.ListTransactionsRequest(
                tuple(request.state_filters), tuple(request.producer_id_filters)
            ),
            request_context(),
        )
        return pb.ListTransactionsResponse(
            error_code=r.error_code,
            error_message=r.error_message,
            transactions=[
                pb.ListedTransaction(
                    transactional_id=x.transactional_id, producer_id=x.producer_id, state=x.state
                )
                for x in r.transactions
            ],
        )


def _described(r: t.DescribedTransaction) -> pb.DescribedTransaction:
    d = r.transaction
    if d is None:
        return pb.DescribedTransaction(
            transactional_id=r.transactional_id,
            error_code=r.error_code,
            error_message=r.error_message,
            state="Dead",
        )
    return pb.DescribedTransaction(
        transactional_id=d.transactional_id,
        error_code=r.error_code,
        error_message=r.error_message,
        state=d.state,
        producer_id=d.producer_id,
        producer_epoch=d.producer_epoch,
        transaction_timeout_ms=d.timeout_ms,
        transaction_start_time_ms=d.txn_start_ms,
        topics=txn_topics(d.partitions),
    )
