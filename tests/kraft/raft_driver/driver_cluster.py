"""Real RaftDrivers for the driver tests: file-backed storage in tmp dirs, one gRPC Quorum server
each on 127.0.0.1 (through clients.bridge), and a state machine that records every entry it is
given, loads and takes snapshots of that record, and logs each leader change it hears of."""

from __future__ import annotations

import random
import socket

import msgpack
import trio

from broker.metadata.servicer import QuorumServicer
from clients.errors import KraftError
from clients.grpc_server import TrioGrpcServer
from kraft.raft import RaftConfig, RaftCore
from kraft.raft.disk import (
    FileElectionStore,
    FileRaftLog,
    metadata_log_dir,
    quorum_state_path,
    write_initial,
)
from kraft.raft.disk_log import DEFAULT_SEGMENT_BYTES
from kraft.raft.driver import RaftDriver, monotonic_ms

CLUSTER_ID = "driver-test-cluster"
CONFIG = RaftConfig(
    election_timeout_ms=150,
    fetch_timeout_ms=500,
    election_backoff_max_ms=150,
    request_timeout_ms=300,
    retry_backoff_ms=20,
    fetch_max_wait_ms=100,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        log_dir,
        addresses: dict[int, str],
        seed: int,
        config: RaftConfig = CONFIG,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.node_id = node_id
        self.address = addresses[node_id]
        if not quorum_state_path(log_dir).exists():
            write_initial(quorum_state_path(log_dir), voters)
        self.log = FileRaftLog(
            metadata_log_dir(log_dir), now_ms=monotonic_ms(), segment_bytes=segment_bytes
        )
        self.store = FileElectionStore(quorum_state_path(log_dir))
        core = RaftCore(
            node_id, voters, self.log, self.store, random.Random(seed), config, monotonic_ms()
        )
        # The state machine: every entry applied, as (offset, epoch, payload, control).
        self.applied: list[tuple[int, int, bytes, bool]] = []
        self.loaded: list[tuple[object, bytes]] = []  # (snapshot id, bytes) given to load
        self.taken: dict[int, bytes] = {}  # snapshot end offset -> bytes taken
        self.leader_changes: list[tuple[int | None, int]] = []
        self.served: list[object] = []  # inbound requests, in arrival order
        peers = {i: a for i, a in addresses.items() if i != node_id}
        self.driver = RaftDriver(
            core,
            self.log,
            self.store,
            peers,
            on_commit=self._apply,
            on_snapshot_load=self._load,
            take_snapshot=self._take,
            on_leader_change=lambda *view: self.leader_changes.append(view),
            cluster_id=CLUSTER_ID,
        )
        self.server = None

    def _apply(self, entries) -> None:
        expected = self.applied[-1][0] + 1 if self.applied else self.driver.committed_end
        for e in entries:
            assert e.offset == expected, f"node {self.node_id} applied {e.offset}, not {expected}"
            expected += 1
            self.applied.append((e.offset, e.epoch, e.payload, e.control))

    def _load(self, snapshot_id, data: bytes) -> None:
        self.loaded.append((snapshot_id, data))
        self.applied = [tuple(e) for e in msgpack.unpackb(data)]
        assert len(self.applied) == snapshot_id.offset

    def _take(self) -> bytes:
        data = msgpack.packb(self.applied)
        self.taken[len(self.applied)] = data
        return data

    async def start(self, nursery: trio.Nursery) -> None:
        servicer = QuorumServicer(self.driver)
        handle = self.driver.handle_request

        async def recording(request):
            self.served.append(request)
            return await handle(request)

        self.driver.handle_request = recording
        self.server = TrioGrpcServer(self.address, grace_s=0)
        servicer.register(self.server)
        await nursery.start(self.server.serve)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None

    def payloads(self) -> list[bytes]:
        return [p for _, _, p, control in self.applied if not control]


async def wait_for_leader(nodes: list[Node], above_epoch: int = -1) -> Node:
    while True:
        leaders = [
            n for n in nodes if n.driver.core.is_leader and n.driver.core.epoch > above_epoch
        ]
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
        assert n.applied == first, (
            f"node {n.node_id} applied differently from node {nodes[0].node_id}"
        )
