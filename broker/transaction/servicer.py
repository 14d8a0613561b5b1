"""The Transaction gRPC service: protobuf in and out at this edge (broker/transaction/wire.py),
each request to the driver of the id's `__transaction_state` partition. A broker that does not
coordinate the id answers NOT_COORDINATOR and the producer looks its coordinator up again.
ACLs as Kafka: Write on the TransactionalId for a producer's calls (and Write on each topic it
adds, Read on the group whose offsets it adds), Describe for DescribeTransactions and
ListTransactions; KIP-890's verify_only comes from partition leaders (ClusterAction)."""
from __future__ import annotations

from typing import Callable

from broker.edge.request_limits import checked
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.transaction import messages as m
from broker.transaction import request_checks as checks
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.driver import TransactionDriver
from broker.transaction.wire import (add_partitions_request, add_partitions_response, described,
                                     end_txn_request, message)
from clients.errors import ErrorCode
from clients.types import TopicPartition
from clients.wire import transaction_pb2 as pb
from kraft.security.acl import Operation as Op, ResourceType as R

E = ErrorCode
WRITE_TIMEOUT_S = 30.0      # a request that appends waits at most this for its record
OFFSETS_TOPIC = "__consumer_offsets"


class TransactionServicer:
    def __init__(self, coordinators: TransactionCoordinators,
                 offsets_partition_for: Callable[[str], int],
                 authorizer: RequestAuthorizer = OPEN) -> None:
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
            return type(fallback)(E.NOT_COORDINATOR, message=f"transactional id "
                                                             f"'{transactional_id}'")
        return await driver.ask(lambda handle, now: call(driver.core, handle, now), fallback,
                                WRITE_TIMEOUT_S)

    async def verify_locally(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: frozenset) -> dict[TopicPartition, ErrorCode] | None:
        """KIP-890 for this broker's own partitions: verify_only's answer per partition, asked
        of the local coordinator without the node check (the caller is this broker); None when
        another broker coordinates the id (broker/transaction/verification.py asks it)."""
        if self._driver(transactional_id) is None:
            return None
        req = m.AddPartitionsRequest(transactional_id, producer_id, producer_epoch,
                                     frozenset(partitions), verify_only=True)
        answer = await self._ask(
            transactional_id, lambda core, h, now: core.handle_add_partitions(h, req, now),
            m.AddPartitionsResponse(E.REQUEST_TIMED_OUT))
        if answer.error:
            return dict.fromkeys(partitions, answer.error)
        return dict(answer.partitions)

    # -- the producer's calls ---------------------------------------------------------------------
    @checked(checks.AddPartitionsToTxn, pb.AddPartitionsToTxnResponse)
    async def AddPartitionsToTxn(self, request: pb.AddPartitionsToTxnRequest
                                 ) -> pb.AddPartitionsToTxnResponse:
        req = add_partitions_request(request)
        denial = (self.authz.node_call_denial() if req.verify_only
                  else self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id))
        if denial is not None:
            return add_partitions_response(m.AddPartitionsResponse(
                E(denial[0]), tuple((tp, E(denial[0])) for tp in sorted(req.partitions)),
                denial[1]))
        # verify_only comes from the partition's leader, which checked the producer's Write on
        # the topic itself; a node need not have Write on every topic (Kafka skips it too).
        refused = {} if req.verify_only else {
            tp: E.TOPIC_AUTHORIZATION_FAILED for tp in req.partitions
            if not self.authz.allowed(Op.WRITE, R.TOPIC, tp.topic)}
        if not refused:
            refused = {tp: E.UNKNOWN_TOPIC_OR_PARTITION for tp in req.partitions
                       if not self.coordinators.partition_exists(tp)}
        if refused:
            # Kafka: nothing is added when any partition is refused (not allowed, or not there);
            # the others were not attempted.
            return add_partitions_response(m.AddPartitionsResponse(E.NONE, tuple(
                (tp, refused.get(tp, E.OPERATION_NOT_ATTEMPTED)) for tp in sorted(req.partitions))))
        return add_partitions_response(await self._ask(
            req.transactional_id, lambda core, h, now: core.handle_add_partitions(h, req, now),
            m.AddPartitionsResponse(E.REQUEST_TIMED_OUT)))

    @checked(checks.AddOffsetsToTxn, pb.AddOffsetsToTxnResponse)
    async def AddOffsetsToTxn(self, request: pb.AddOffsetsToTxnRequest
                              ) -> pb.AddOffsetsToTxnResponse:
        denial = (self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id)
                  or self.authz.denial(Op.READ, R.GROUP, request.group_id))
        if denial is not None:
            return pb.AddOffsetsToTxnResponse(error_code=denial[0], error_message=denial[1])
        tp = TopicPartition(OFFSETS_TOPIC, self.offsets_partition_for(request.group_id))
        answer = await self._ask(request.transactional_id, lambda core, h, now: core.handle_add_offsets(
            h, request.transactional_id, request.producer_id, request.producer_epoch, tp, now),
            m.TxnResponse(E.REQUEST_TIMED_OUT))
        return pb.AddOffsetsToTxnResponse(error_code=answer.error,
                                          error_message=message(answer.error, answer.message))

    @checked(checks.EndTxn, pb.EndTxnResponse)
    async def EndTxn(self, request: pb.EndTxnRequest) -> pb.EndTxnResponse:
        denial = self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id)
        if denial is not None:
            return pb.EndTxnResponse(error_code=denial[0], error_message=denial[1])
        req = end_txn_request(request)
        answer = await self._ask(req.transactional_id,
                                 lambda core, h, now: core.handle_end_txn(h, req, now),
                                 m.TxnResponse(E.REQUEST_TIMED_OUT))
        return pb.EndTxnResponse(error_code=answer.error,
                                 error_message=message(answer.error, answer.message))

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int, new_producer_id) -> m.InitProducerIdResponse:
        """InitProducerId with a transactional id (the Broker service routes it here, after its
        ACL check). `new_producer_id()` awaits a fresh id, asked only when the core needs one."""
        driver = self._driver(transactional_id)
        if driver is None:
            return m.InitProducerIdResponse(E.NOT_COORDINATOR, message=message(
                E.NOT_COORDINATOR, f"transactional id '{transactional_id}'"))
        fresh = await new_producer_id() if driver.core.needs_producer_id(transactional_id) else None
        req = m.InitProducerIdRequest(transactional_id, timeout_ms, producer_id, producer_epoch)
        return await driver.ask(
            lambda handle, now: driver.core.handle_init_producer_id(handle, req, now, fresh),
            m.InitProducerIdResponse(E.REQUEST_TIMED_OUT), WRITE_TIMEOUT_S)

    # -- admin --------------------------------------------------------------------------------------
    @checked(checks.DescribeTransactions, pb.DescribeTransactionsResponse)
    async def DescribeTransactions(self, request: pb.DescribeTransactionsRequest
                                   ) -> pb.DescribeTransactionsResponse:
        out = pb.DescribeTransactionsResponse()
        for txn_id in request.transactional_ids:
            denial = self.authz.denial(Op.DESCRIBE, R.TRANSACTIONAL_ID, txn_id)
            driver = self._driver(txn_id)
            if denial is not None:
                out.transactions.add(transactional_id=txn_id, error_code=denial[0],
                                     error_message=denial[1], state="Dead")
            elif driver is None:
                out.transactions.append(described(m.DescribedTransaction(txn_id,
                                                                         E.NOT_COORDINATOR)))
            else:
                out.transactions.append(described(driver.core.describe(txn_id)))
        return out

    @checked(checks.ListTransactions, pb.ListTransactionsResponse)
    async def ListTransactions(self, request: pb.ListTransactionsRequest
                               ) -> pb.ListTransactionsResponse:
        """The ids this broker coordinates that the caller may Describe; an admin asks every
        broker."""
        out = pb.ListTransactionsResponse()
        states, pids = frozenset(request.state_filters), frozenset(request.producer_id_filters)
        for driver in self.coordinators.drivers():
            error, listed = driver.core.list_transactions(states, pids)
            if error:           # still loading: say so rather than list too few
                return pb.ListTransactionsResponse(error_code=error, error_message=message(error))
            for txn_id, pid, state in listed:
                if self.authz.allowed(Op.DESCRIBE, R.TRANSACTIONAL_ID, txn_id):
                    out.transactions.add(transactional_id=txn_id, producer_id=pid, state=state)
        out.transactions.sort(key=lambda t: t.transactional_id)
        return out
