"""TxnOffsetCommit on a real node: the group coordinator takes the transaction's offsets into
`__consumer_offsets` (a transactional batch of the producer, through the real replica manager),
keeps them out of OffsetFetch while no COMMIT marker has come, and a restarted node that replays
the partition keeps them pending too; a stale producer epoch is refused, and so (KIP-890) are
offsets whose group was never added to the transaction (AddOffsetsToTxn)."""

from __future__ import annotations

import pytest
import trio

from clients.cluster import Cluster
from clients.errors import ErrorCode as E
from clients.group_rpc import (
    TRANSACTION_KEY,
    CoordinatorClient,
    broker_stub,
    deadline_after,
    transaction_stub,
)
from clients.wire import broker_pb2 as bpb
from clients.wire import group_pb2 as gp
from clients.wire import transaction_pb2 as tpb

pytestmark = pytest.mark.e2e

NODE = [
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.num.partitions=1",
    "offsets.topic.replication.factor=1",
]


def txn_commit(producer_id: int, offset: int, epoch: int) -> gp.TxnOffsetCommitRequest:
    return gp.TxnOffsetCommitRequest(
        transactional_id="app-1",
        group_id="readers",
        producer_id=producer_id,
        producer_epoch=epoch,
        generation_id=-1,
        partitions=[gp.CommitPartition(topic="in", partition=0, offset=offset, leader_epoch=-1)],
    )


async def retried(client: CoordinatorClient, method: str, req, **kw):
    return await client.call_retrying(
        method, req, deadline_after(20), error_of=lambda r: r.error_code, **kw
    )


async def open_transaction(cluster: Cluster, add_offsets: bool) -> tuple[int, int]:
    """InitProducerId for 'app-1', twice (and, with `add_offsets`, AddOffsetsToTxn of the group):
    its producer id and epoch."""
    coordinator = CoordinatorClient(cluster, "app-1", TRANSACTION_KEY)
    for _ in range(2):  # twice: an epoch above 0, so that a stale one can be sent
        init = await retried(
            coordinator,
            "InitProducerId",
            bpb.InitProducerIdRequest(transactional_id="app-1", transaction_timeout_ms=60_000),
            stub_of=broker_stub,
        )
    if add_offsets:
        await retried(
            coordinator,
            "AddOffsetsToTxn",
            tpb.AddOffsetsToTxnRequest(
                transactional_id="app-1",
                producer_id=init.producer_id,
                producer_epoch=init.producer_epoch,
                group_id="readers",
            ),
            stub_of=transaction_stub,
        )
    return init.producer_id, init.producer_epoch


async def commit_and_fetch(address: str, offsets, add_offsets: bool = True) -> tuple[list, dict]:
    """TxnOffsetCommit of each (offset, epoch delta) in `offsets` in a transaction just opened;
    each answer's codes, then what OffsetFetch shows."""
    cluster = Cluster(address)
    try:
        group = CoordinatorClient(cluster, "readers")
        answers = []
        if offsets:
            producer_id, epoch = await open_transaction(cluster, add_offsets)
            for offset, delta in offsets:
                resp = await retried(
                    group, "TxnOffsetCommit", txn_commit(producer_id, offset, epoch + delta)
                )
                answers.append([p.error_code for p in resp.partitions])
        fetched = await group.fetch_offsets(None, deadline_after(20))
        return answers, fetched
    finally:
        cluster.close()


def test_txn_offsets_stay_pending_through_a_restart(node_factory):
    node = node_factory("node1", NODE)
    node.start()
    answers, fetched = trio.run(commit_and_fetch, node.address, [(42, 0), (43, -1)])
    assert answers == [[E.NONE], [E.INVALID_PRODUCER_EPOCH]]
    assert fetched == {}  # pending: no COMMIT marker yet
    node.stop()
    node.start()
    _, fetched = trio.run(commit_and_fetch, node.address, [])
    assert fetched == {}


def test_offsets_of_a_group_not_added_to_the_transaction_are_refused(node_factory):
    node = node_factory("node1", NODE)
    node.start()
    answers, fetched = trio.run(commit_and_fetch, node.address, [(42, 0)], False)
    assert answers == [[E.INVALID_TXN_STATE]]
    assert fetched == {}
