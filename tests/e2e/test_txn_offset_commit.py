"""TxnOffsetCommit on a real node: the group coordinator takes the transaction's offsets into
`__consumer_offsets` (a transactional batch of the producer, through the real replica manager),
keeps them out of OffsetFetch while no COMMIT marker has come, and a restarted node that replays
the partition keeps them pending too; a stale producer epoch is refused."""

from __future__ import annotations

import pytest
import trio

from clients.cluster import Cluster
from clients.errors import ErrorCode as E
from clients.group_rpc import CoordinatorClient, deadline_after
from clients.wire import group_pb2 as gp

pytestmark = pytest.mark.e2e

NODE = [
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.num.partitions=1",
    "offsets.topic.replication.factor=1",
]


def txn_commit(offset: int, epoch: int) -> gp.TxnOffsetCommitRequest:
    return gp.TxnOffsetCommitRequest(
        transactional_id="app-1",
        group_id="readers",
        producer_id=777,
        producer_epoch=epoch,
        generation_id=-1,
        partitions=[gp.CommitPartition(topic="in", partition=0, offset=offset, leader_epoch=-1)],
    )


async def commit_and_fetch(address: str, requests) -> tuple[list, dict]:
    cluster = Cluster(address)
    try:
        group = CoordinatorClient(cluster, "readers")
        answers = []
        for req in requests:
            resp = await group.call_retrying(
                "TxnOffsetCommit", req, deadline_after(20), error_of=lambda r: r.error_code
            )
            answers.append([p.error_code for p in resp.partitions])
        fetched = await group.fetch_offsets(None, deadline_after(20))
        return answers, fetched
    finally:
        cluster.close()


def test_txn_offsets_stay_pending_through_a_restart(node_factory):
    node = node_factory("node1", NODE)
    node.start()
    answers, fetched = trio.run(
        commit_and_fetch, node.address, [txn_commit(42, epoch=3), txn_commit(43, epoch=2)]
    )
    assert answers == [[E.NONE], [E.INVALID_PRODUCER_EPOCH]]
    assert fetched == {}  # pending: no COMMIT marker yet
    node.stop()
    node.start()
    _, fetched = trio.run(commit_and_fetch, node.address, [])
    assert fetched == {}
