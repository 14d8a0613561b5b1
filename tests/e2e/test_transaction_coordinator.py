"""A real node's transaction coordinator over raw gRPC: FindCoordinator key_type 1 creates
`__transaction_state` and names the node; InitProducerId, AddPartitionsToTxn and EndTxn run a
transaction; after kill -9 the coordinator reloads the log, so a decided commit stays decided
(never aborted) and an ongoing transaction stays ongoing until a new producer instance fences
it: the old instance is then PRODUCER_FENCED."""

from __future__ import annotations

import pytest
from waiting import eventually

from clients.bridge import open_channel
from clients.errors import ErrorCode as E
from clients.wire import broker_pb2 as bpb
from clients.wire import broker_pb2_grpc, controller_pb2_grpc, group_pb2_grpc, transaction_pb2_grpc
from clients.wire import controller_pb2 as cpb
from clients.wire import group_pb2 as gpb
from clients.wire import transaction_pb2 as tpb

pytestmark = pytest.mark.e2e

NOT_YET = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS}


class Raw:
    def __init__(self, address: str) -> None:
        self.channel = open_channel(address)
        self.broker = broker_pb2_grpc.BrokerStub(self.channel)
        self.group = group_pb2_grpc.GroupStub(self.channel)
        self.txn = transaction_pb2_grpc.TransactionStub(self.channel)
        self.controller = controller_pb2_grpc.ControllerStub(self.channel)

    def settled(self, call, what: str):
        """`call()`'s answer once the coordinator is there (created, elected, loaded)."""
        return eventually(lambda: (a := call()).error_code not in NOT_YET and a, 60, what)

    def init(self, txn_id: str) -> bpb.InitProducerIdResponse:
        return self.settled(
            lambda: self.broker.InitProducerId(
                bpb.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000),
                timeout=15,
            ),
            f"InitProducerId of {txn_id}",
        )

    def describe(self, txn_id: str) -> tpb.DescribedTransaction:
        return self.settled(
            lambda: self.txn.DescribeTransactions(
                tpb.DescribeTransactionsRequest(transactional_ids=[txn_id]), timeout=10
            ).transactions[0],
            f"DescribeTransactions of {txn_id}",
        )

    def add(self, txn_id: str, pid: int, epoch: int) -> tpb.AddPartitionsToTxnResponse:
        return self.txn.AddPartitionsToTxn(
            tpb.AddPartitionsToTxnRequest(
                transactional_id=txn_id,
                producer_id=pid,
                producer_epoch=epoch,
                topics=[tpb.TxnTopic(topic="orders", partitions=[0])],
            ),
            timeout=15,
        )

    def end(self, txn_id: str, pid: int, epoch: int, committed: bool) -> tpb.EndTxnResponse:
        return self.txn.EndTxn(
            tpb.EndTxnRequest(
                transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=committed
            ),
            timeout=15,
        )


def test_decisions_and_ongoing_transactions_survive_kill9(node):
    raw = Raw(node.address)
    created = raw.controller.CreateTopics(
        cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name="orders", num_partitions=1, replication_factor=-1)]
        ),
        timeout=10,
    )
    assert created.topics[0].error_code == 0
    found = raw.settled(
        lambda: raw.group.FindCoordinator(
            gpb.FindCoordinatorRequest(key="committer", key_type=1), timeout=15
        ),
        "FindCoordinator",
    )
    assert found.error_code == 0 and found.port == node.port

    committer = raw.init("committer")
    assert committer.error_code == 0 and committer.producer_epoch == 0
    pid, epoch = committer.producer_id, committer.producer_epoch
    assert raw.add("committer", pid, epoch).error_code == 0
    assert raw.end("committer", pid, epoch, committed=True).error_code == 0

    ongoing = raw.init("ongoing")
    assert raw.add("ongoing", ongoing.producer_id, ongoing.producer_epoch).error_code == 0

    node.kill9()
    node.start()
    raw = Raw(node.address)
    decided = raw.describe("committer")
    assert decided.state in ("PrepareCommit", "CompleteCommit"), decided
    assert (decided.producer_id, decided.producer_epoch) == (pid, epoch)
    assert raw.end("committer", pid, epoch, committed=False).error_code in (
        E.INVALID_TXN_STATE,
        E.CONCURRENT_TRANSACTIONS,
    )  # a commit is never aborted

    still = raw.describe("ongoing")
    assert (still.state, [(t.topic, list(t.partitions)) for t in still.topics]) == (
        "Ongoing",
        [("orders", [0])],
    )
    # A new instance of "ongoing" fences the old one and aborts its transaction first.
    fencing = raw.init("ongoing")
    assert fencing.error_code == E.CONCURRENT_TRANSACTIONS, fencing
    old = raw.end("ongoing", ongoing.producer_id, ongoing.producer_epoch, committed=True)
    assert old.error_code == E.PRODUCER_FENCED, old
    assert raw.describe("ongoing").state in ("PrepareAbort", "CompleteAbort")
