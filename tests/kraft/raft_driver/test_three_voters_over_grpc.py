"""Three voters, each a real RaftDriver with file-backed storage and its own gRPC server on
127.0.0.1: they elect a leader and commit proposals everywhere; after the leader's server stops,
the other two elect a new leader that commits more, and every node applies the same entries."""

from __future__ import annotations

import trio
from driver_cluster import Node, assert_identical, commit, free_port, wait_applied

from clients.bridge import call, open_channel
from clients.quorum_info import quorum_info_from_proto
from clients.wire import quorum_pb2, quorum_pb2_grpc

VOTERS = frozenset({1, 2, 3})


async def test_elect_commit_fail_over_and_agree(tmp_path):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in sorted(VOTERS)}
    nodes = [Node(i, VOTERS, tmp_path / f"node-{i}", addresses, seed=i) for i in sorted(VOTERS)]
    try:
        with trio.fail_after(25):
            async with trio.open_nursery() as nursery:
                for n in nodes:
                    await n.start(nursery)
                    await nursery.start(n.driver.run)

                # 1. A leader is elected and commits on all three.
                for i in range(10):
                    old = await commit(nodes, b"first-%d" % i)
                await wait_applied(nodes, 10)
                assert_identical(nodes)
                assert nodes[0].payloads() == [b"first-%d" % i for i in range(10)]
                assert sum(n.driver.core.is_leader for n in nodes) == 1

                # DescribeQuorum over gRPC names the leader.
                channel = open_channel(old.address)
                try:
                    stub = quorum_pb2_grpc.QuorumStub(channel)
                    info = quorum_info_from_proto(
                        await call(stub.DescribeQuorum, quorum_pb2.DescribeQuorumRequest(), 2)
                    )
                finally:
                    channel.close()
                assert info.leader_id == old.node_id and info.role == "Leader"
                assert {r.replica_id for r in info.voters} == set(VOTERS)
                old_epoch = old.driver.core.epoch

                # 2. The leader's server stops: nobody can reach it; the others elect anew.
                await old.stop()
                old.server = None
                survivors = [n for n in nodes if n is not old]
                for i in range(10):
                    new = await commit(survivors, b"second-%d" % i, above_epoch=old_epoch)
                assert new is not old and new.driver.core.epoch > old_epoch
                await wait_applied(survivors, 20)
                assert_identical(survivors)

                # 3. The old leader (its driver still runs and can still call out) learns the
                # new epoch, follows, and catches up: all three applied the very same entries.
                await wait_applied(nodes, 20)
                assert not old.driver.core.is_leader
                assert_identical(nodes)
                assert nodes[0].payloads() == (
                    [b"first-%d" % i for i in range(10)] + [b"second-%d" % i for i in range(10)]
                )
                nursery.cancel_scope.cancel()
    finally:
        for n in nodes:
            if n.server is not None:
                await n.stop()
            n.log.close()
