"""Admin's transaction calls against fake brokers over real gRPC: list asks every broker and
merges (retrying one still loading), describe finds the id's coordinator (FindCoordinator key
type 1) and asks it, abort writes an ABORT marker on the partition's leader (WriteTxnMarkers,
retried when leadership moved)."""

from __future__ import annotations

import pathlib
import sys

import pytest

from clients.admin import AsyncAdmin, TransactionDescription, TransactionListing
from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.types import TopicPartition
from clients.wire import broker_pb2 as bp
from clients.wire import transaction_pb2 as tp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_transactional_producer_fake_broker import TxnBroker  # noqa: E402


class AdminBroker(TxnBroker):
    def __init__(self, listed=()) -> None:
        super().__init__()
        self.listed = list(listed)
        self.same_view_as: AdminBroker | None = None  # answer Metadata as that broker does

    def Metadata(self, req, ctx):
        if self.same_view_as is not None:
            return self.same_view_as.Metadata(req, ctx)
        return super().Metadata(req, ctx)

    def ListTransactions(self, req, ctx):
        if error := self._log("ListTransactions", req):
            return tp.ListTransactionsResponse(error_code=error, error_message="injected")
        return tp.ListTransactionsResponse(transactions=self.listed)

    def DescribeTransactions(self, req, ctx):
        self._log("DescribeTransactions", req)
        out = []
        for tid in req.transactional_ids:
            if tid != "app-1":
                out.append(
                    tp.DescribedTransaction(
                        transactional_id=tid, error_code=E.TRANSACTIONAL_ID_NOT_FOUND
                    )
                )
                continue
            out.append(
                tp.DescribedTransaction(
                    transactional_id=tid,
                    state="Ongoing",
                    producer_id=4000,
                    producer_epoch=3,
                    transaction_timeout_ms=60000,
                    transaction_start_time_ms=1234,
                    topics=[tp.TxnTopic(topic="orders", partitions=[2, 0])],
                )
            )
        return tp.DescribeTransactionsResponse(transactions=out)

    def WriteTxnMarkers(self, req, ctx):
        error = self._log("WriteTxnMarkers", req)
        return bp.WriteTxnMarkersResponse(
            markers=[
                bp.TxnMarkerResult(
                    producer_id=m.producer_id,
                    partitions=[
                        bp.TxnMarkerPartitionResult(topic=t.topic, partition=p, error_code=error)
                        for t in m.topics
                        for p in t.partitions
                    ],
                )
                for m in req.markers
            ]
        )


@pytest.fixture
def brokers():
    a = AdminBroker(
        [tp.ListedTransaction(transactional_id="app-1", producer_id=4000, state="Ongoing")]
    ).start()
    b = AdminBroker(
        [tp.ListedTransaction(transactional_id="app-2", producer_id=4001, state="Empty")]
    ).start()
    a.dead_leader = b.address  # node 1 is b, and Metadata names it every partition's leader
    b.same_view_as = a
    a.create("orders", 3)
    yield a, b
    a.stop()
    b.stop()


async def test_list_asks_every_broker_merges_and_retries_one_loading(brokers):
    a, b = brokers
    b.fail_next("ListTransactions", E.COORDINATOR_LOAD_IN_PROGRESS)
    async with AsyncAdmin(a.address) as admin:
        assert await admin.list_transactions(["Ongoing", "Empty"], [4000, 4001]) == [
            TransactionListing("app-1", 4000, "Ongoing", 0),
            TransactionListing("app-2", 4001, "Empty", 1),
        ]
        req = a.requests("ListTransactions")[0]
        assert (list(req.state_filters), list(req.producer_id_filters)) == (
            ["Ongoing", "Empty"],
            [4000, 4001],
        )
        assert len(b.requests("ListTransactions")) == 2
        b.fail_next("ListTransactions", E.UNKNOWN_SERVER_ERROR)
        with pytest.raises(KraftError, match="broker 1"):
            await admin.list_transactions()


async def test_describe_asks_the_transaction_coordinator(brokers):
    a, _ = brokers
    async with AsyncAdmin(a.address) as admin:
        [desc] = await admin.describe_transactions(["app-1"])
        assert desc == TransactionDescription(
            "app-1",
            0,
            "Ongoing",
            4000,
            3,
            60000,
            1234,
            (TopicPartition("orders", 0), TopicPartition("orders", 2)),
        )
        with pytest.raises(KraftError) as raised:
            await admin.describe_transactions(["nope"])
        assert raised.value.code == E.TRANSACTIONAL_ID_NOT_FOUND
        assert "kraft transactions list" in raised.value.message
    finds = a.requests("FindCoordinator")
    assert [(f.key, f.key_type) for f in finds] == [("app-1", 1), ("nope", 1)]


async def test_abort_writes_an_abort_marker_on_the_leader(brokers):
    a, b = brokers
    b.fail_next("WriteTxnMarkers", E.NOT_LEADER_OR_FOLLOWER)
    async with AsyncAdmin(a.address) as admin:
        await admin.abort_transaction("orders", 2, 4000, 3, coordinator_epoch=7)
        assert "WriteTxnMarkers" not in a.names()
        first, retry = b.requests("WriteTxnMarkers")
        assert first == retry
        [marker] = first.markers
        assert (
            marker.producer_id,
            marker.producer_epoch,
            marker.committed,
            marker.coordinator_epoch,
        ) == (4000, 3, False, 7)
        assert [(t.topic, list(t.partitions)) for t in marker.topics] == [("orders", [2])]
        b.fail_next("WriteTxnMarkers", E.INVALID_PRODUCER_EPOCH)
        with pytest.raises(KraftError) as raised:
            await admin.abort_transaction("orders", 2, 4000, 2)
        assert raised.value.code == E.INVALID_PRODUCER_EPOCH and "orders-2" in raised.value.message
        with pytest.raises(KraftError, match="no partition 9"):
            await admin.abort_transaction("orders", 9, 4000, 3)
        with pytest.raises(KraftError, match="does not exist"):
            await admin.abort_transaction("nope", 0, 4000, 3)
