"""Three voters, each a real RaftDriver with file-backed storage and its own gRPC server on
127.0.0.1: they elect a leader and commit proposals everywhere; after the leader's server stops,
the other two elect a new leader that commits more, and every node applies the same entries."""
from __future__ import annotations

import random
import socket

import trio

from broker.quorum_servicer import QuorumServicer
from clients.bridge import call, open_channel, start_server, stop_server
from clients.errors import KraftError
from clients.wire import quorum_pb2, quorum_pb2_grpc
from kraft.raft import RaftConfig, RaftCore
from clients.quorum_info import quorum_info_from_proto
from kraft.raft.disk import (FileElectionStore, FileRaftLog, metadata_log_dir, quorum_state_path,
                             write_initial)
from kraft.raft.driver import RaftDriver, monotonic_ms

CONFIG = RaftConfig(election_timeout_ms=150, fetch_timeout_ms=500, election_backoff_max_ms=150,
                    request_timeout_ms=300, retry_backoff_ms=20, fetch_max_wait_ms=100)
VOTERS = frozenset({1, 2, 3})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, node_id: int, log_dir, addresses: dict[int, str], seed: int) -> None:
        self.node_id = node_id
        self.address = addresses[node_id]
        write_initial(quorum_state_path(log_dir), VOTERS)
        self.log = FileRaftLog(metadata_log_dir(log_dir), now_ms=monotonic_ms())
        self.store = FileElectionStore(quorum_state_path(log_dir))
        core = RaftCore(node_id, VOTERS, self.log, self.store, random.Random(seed), CONFIG,
                        monotonic_ms())
        self.applied: list[tuple[int, int, bytes, bool]] = []
        peers = {i: a for i, a in addresses.items() if i != node_id}
        self.driver = RaftDriver(core, self.log, self.store, peers, on_commit=self._apply)
        self.server = None

    def _apply(self, entries) -> None:
        expected = self.applied[-1][0] + 1 if self.applied else 0
        for e in entries:
            assert e.offset == expected, f"node {self.node_id} applied {e.offset}, not {expected}"
            expected += 1
            self.applied.append((e.offset, e.epoch, e.payload, e.control))

    def start(self, token) -> None:
        servicer = QuorumServicer(self.driver)
        self.server, _ = start_server(self.address, lambda s: servicer.register(s, token))

    def payloads(self) -> list[bytes]:
        return [p for _, _, p, control in self.applied if not control]


async def wait_for_leader(nodes: list[Node], above_epoch: int = -1) -> Node:
    while True:
        leaders = [n for n in nodes if n.driver.core.is_leader
                   and n.driver.core.epoch > above_epoch]
        if leaders:
            return max(leaders, key=lambda n: n.driver.core.epoch)
        await trio.sleep(0.02)


async def commit(nodes: list[Node], payload: bytes, above_epoch: int = -1) -> Node:
    """Propose through whichever node leads until the payload commits there."""
    while True:
        leader = await wait_for_leader(nodes, above_epoch)
        try:
            offset = await leader.driver.propose([payload])
            with trio.move_on_after(2):
                await leader.driver.wait_committed(offset)
                return leader
        except KraftError:
            pass
        await trio.sleep(0.02)


async def wait_applied(nodes: list[Node], count: int) -> None:
    while any(len(n.payloads()) < count for n in nodes):
        await trio.sleep(0.02)


def assert_identical(nodes: list[Node]) -> None:
    first = nodes[0].applied
    for n in nodes[1:]:
        assert n.applied == first, \
            f"node {n.node_id} applied differently from node {nodes[0].node_id}"


async def test_elect_commit_fail_over_and_agree(tmp_path):
    addresses = {i: f"127.0.0.1:{free_port()}" for i in sorted(VOTERS)}
    nodes = [Node(i, tmp_path / f"node-{i}", addresses, seed=i) for i in sorted(VOTERS)]
    token = trio.lowlevel.current_trio_token()
    try:
        with trio.fail_after(25):
            async with trio.open_nursery() as nursery:
                for n in nodes:
                    n.start(token)
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
                        await call(stub.DescribeQuorum, quorum_pb2.DescribeQuorumRequest(), 2))
                finally:
                    channel.close()
                assert info.leader_id == old.node_id and info.role == "Leader"
                assert {r.replica_id for r in info.voters} == set(VOTERS)
                old_epoch = old.driver.core.epoch

                # 2. The leader's server stops: nobody can reach it; the others elect anew.
                await stop_server(old.server, grace=0)
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
                assert nodes[0].payloads() == ([b"first-%d" % i for i in range(10)]
                                               + [b"second-%d" % i for i in range(10)])
                nursery.cancel_scope.cancel()
    finally:
        for n in nodes:
            if n.server is not None:
                await stop_server(n.server, grace=0)
            n.log.close()
