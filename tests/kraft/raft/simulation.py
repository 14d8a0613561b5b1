"""A deterministic simulation of a kraft quorum: seeded scheduler, fake clock, a router that drops,
delays, duplicates, reorders and cuts links, crashes that lose unflushed data; invariants checked
after every event."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field

import msgpack
from sim_scheduler import InvariantViolation, SeededScheduler  # noqa: F401  (tests import it here)

from clients.errors import ErrorCode
from kraft.raft import MemoryElectionStore, MemoryRaftLog, OffsetAndEpoch, RaftConfig, RaftCore
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    VoteRequest,
    error_response,
)
from kraft.raft.validation import field_problem

REQUESTS = (
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
)

# Timeouts scaled down from Kafka's (network delays here are 1-8 ms) so a seed covers several
# elections in a few thousand simulated milliseconds; the ratios between them are Kafka's.
SIM_CONFIG = RaftConfig(
    election_timeout_ms=150,
    fetch_timeout_ms=300,
    election_backoff_max_ms=150,
    request_timeout_ms=150,
    retry_backoff_ms=10,
    fetch_max_wait_ms=100,
    fetch_max_entries=8,
    snapshot_chunk_bytes=4,
    snapshot_interval_entries=12,
)


@dataclass
class StateMachine:
    """The metadata image stand-in: how many entries were applied and a digest of all of them."""

    count: int = 0
    digest: int = 0

    def snapshot(self) -> bytes:
        return msgpack.packb([self.count, self.digest])

    @classmethod
    def load(cls, data: bytes) -> StateMachine:
        return cls(*msgpack.unpackb(data))


def chain(digest: int, epoch: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(epoch.to_bytes(8, "big"), digest))


@dataclass
class Node:
    node_id: int
    voter: bool
    log: MemoryRaftLog = field(default_factory=MemoryRaftLog)
    store: MemoryElectionStore = field(default_factory=MemoryElectionStore)
    core: RaftCore | None = None
    alive: bool = True
    incarnation: int = 0
    pending: object = None
    tick_at: int | None = None
    sm: StateMachine = field(default_factory=StateMachine)
    hw_seen: int = 0
    epoch_seen: int = 0
    stored_epoch_seen: int = 0
    # Fetches this node was handed and has not answered (parked): (requester, request id) -> it.
    open_fetches: dict = field(default_factory=dict)


class Simulation(SeededScheduler):
    max_events_per_instant = 2000

    def __init__(
        self,
        seed: int,
        voters: int = 3,
        observers: int = 1,
        config: RaftConfig = SIM_CONFIG,
        drop: float = 0.0,
        duplicate: float = 0.0,
        max_delay_ms: int = 8,
        flush_delay_ms: int = 3,
        record_messages: bool = False,
        timed_out: float = 0.0,
        refuse_dead: bool = False,
    ) -> None:
        super().__init__(seed)
        self.config = config
        self.drop, self.duplicate, self.max_delay_ms = drop, duplicate, max_delay_ms
        self.flush_delay_ms = flush_delay_ms
        # Share of requests answered REQUEST_TIMED_OUT unread, as a driver with a stalled loop does.
        self.timed_out = timed_out
        # A dead node's port refuses connections: a Fetch sent to it, or parked at it when it
        # died, fails at once (the driver's NETWORK_EXCEPTION answer) instead of being lost.
        self.refuse_dead = refuse_dead
        self.refused: set[tuple[int, int]] = set()  # directed links whose Fetches fail at once
        self.sent: list | None = [] if record_messages else None
        self.cut: set[tuple[int, int]] = set()  # directed links that lose every message
        self.voter_ids = frozenset(range(1, voters + 1))
        self.nodes = {i: Node(i, True) for i in self.voter_ids}
        for i in range(voters + 1, voters + 1 + observers):
            self.nodes[i] = Node(i, False)
        # Invariant state: the committed log as every node must see it, prefix digests, leaders.
        self.committed: list[tuple[int, bytes, bool]] = []
        self.digests: list[int] = [0]
        self.leaders: dict[int, int] = {}
        self.proposals = 0
        for node in self.nodes.values():
            self._start(node)

    # -- nodes ------------------------------------------------------------------------------------
    def _start(self, node: Node) -> None:
        node.incarnation += 1
        node.alive, node.pending, node.tick_at = True, None, None
        node.sm, node.hw_seen, node.epoch_seen = StateMachine(), 0, 0
        rng = random.Random(self.rng.getrandbits(64))
        node.core = RaftCore(
            node.node_id,
            self.voter_ids,
            node.log,
            node.store,
            rng,
            self.config,
            self.now,
            is_observer=not node.voter,
        )
        self.pump(node)

    def crash(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.alive:
            return
        node.alive = False
        node.incarnation += 1
        open_fetches, node.open_fetches = node.open_fetches, {}
        if self.refuse_dead:
            for m in open_fetches.values():
                self._refuse(m)
        node.log.crash()
        node.core = None
        self._check_durable(node)

    def restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.alive:
            self._start(node)

    def pump(self, node: Node) -> None:
        """Drive one node's Ready loop: persist now, flush after a (simulated) fsync delay, then
        send, apply and advance."""
        core = node.core
        while node.alive and node.pending is None and core.has_ready():
            ready = core.ready()
            if ready.snapshot_to_install is not None:
                node.log.install_snapshot(*ready.snapshot_to_install)
            if ready.election_state is not None:
                node.store.write(ready.election_state)
            node.pending = ready
            delay = self.rng.randint(0, self.flush_delay_ms) if ready.must_flush else 0
            if delay:
                self.at(self.now + delay, self._finish, node, node.incarnation, ready)
                break
            self._finish(node, node.incarnation, ready, pump=False)
        if node.alive:
            deadline = core.next_deadline_ms
            if deadline is not None and (
                node.tick_at is None or deadline < node.tick_at or node.tick_at < self.now
            ):
                node.tick_at = max(deadline, self.now)
                self.at(node.tick_at, self._tick, node, node.incarnation, node.tick_at)

    def _finish(self, node: Node, incarnation: int, ready, pump: bool = True) -> None:
        if node.incarnation != incarnation:
            return  # crashed before the fsync completed: the Ready is lost with the process
        if ready.must_flush:
            node.log.flush()
        for m in ready.messages:
            self._send(m)
        if ready.snapshot_to_load is not None:
            data = node.log.read_snapshot(ready.snapshot_to_load)
            node.sm = StateMachine.load(data)
            self._check_snapshot(node, ready.snapshot_to_load, data)
        self._observe_high_watermark(node)
        for e in ready.committed:
            self._apply(node, e)
        if ready.snapshot_to_take is not None:
            if node.sm.count != ready.snapshot_to_take.offset:
                self.fail(
                    f"node {node.node_id} asked to snapshot at {ready.snapshot_to_take} "
                    f"but applied {node.sm.count}"
                )
            data = node.sm.snapshot()
            node.log.create_snapshot(ready.snapshot_to_take, data)
            self._check_snapshot(node, ready.snapshot_to_take, data)
        node.pending = None
        node.core.advance(ready)
        if pump:
            self.pump(node)

    def _tick(self, node: Node, incarnation: int, time_ms: int) -> None:
        if node.incarnation != incarnation or node.tick_at != time_ms:
            return
        node.tick_at = None
        node.core.tick(self.now)
        self.pump(node)

    # -- network ----------------------------------------------------------------------------------
    def _send(self, m) -> None:
        if isinstance(m, FetchResponse):
            self.nodes[m.src].open_fetches.pop((m.dst, m.request_id), None)
        if self.sent is not None:
            self.sent.append((self.now, m))
        if (m.src, m.dst) in self.cut or self.rng.random() < self.drop:
            return
        copies = 2 if self.rng.random() < self.duplicate else 1
        for _ in range(copies):
            self.at(self.now + self.rng.randint(1, self.max_delay_ms), self._deliver, m)

    def _refuse(self, m) -> None:
        """The requester's driver answers its own Fetch: NETWORK_EXCEPTION, no leader known."""

        def answer() -> None:
            sender = self.nodes[m.src]
            if sender.alive:
                sender.core.step(
                    error_response(m, m.dst, sender.core.epoch, None, ErrorCode.NETWORK_EXCEPTION),
                    self.now,
                )
                self.pump(sender)

        self.at(self.now + 1, answer)

    def _deliver(self, m) -> None:
        node = self.nodes.get(m.dst)
        if (
            isinstance(m, FetchRequest)
            and (m.src, m.dst) not in self.cut
            and (
                (m.src, m.dst) in self.refused
                or self.refuse_dead
                and node is not None
                and not node.alive
            )
        ):
            self._refuse(m)
            return
        if node is None or not node.alive or (m.src, m.dst) in self.cut:
            return
        if isinstance(m, REQUESTS) and field_problem(m) is not None:
            # The Quorum service would refuse it: an honest node must never send one.
            self.fail(f"node {m.src} sent {m}, which the wire edge refuses: {field_problem(m)}")
        if self.timed_out and isinstance(m, REQUESTS) and self.rng.random() < self.timed_out:
            leader_id, epoch = node.core.leader_and_epoch
            self._send(
                error_response(m, node.node_id, epoch, leader_id, ErrorCode.REQUEST_TIMED_OUT)
            )
            return
        if isinstance(m, FetchRequest):
            node.open_fetches[(m.src, m.request_id)] = m
        node.core.step(m, self.now)
        self.pump(node)

    def isolate(self, node_id: int, inbound: bool = True, outbound: bool = True) -> None:
        for other in self.nodes:
            if other != node_id:
                if outbound:
                    self.cut.add((node_id, other))
                if inbound:
                    self.cut.add((other, node_id))

    def split(self, side: set[int]) -> None:
        for a in self.nodes:
            for b in self.nodes:
                if (a in side) != (b in side):
                    self.cut.add((a, b))

    def heal(self) -> None:
        self.cut.clear()
        self.refused.clear()

    # -- clients ----------------------------------------------------------------------------------
    def leader(self) -> Node | None:
        leaders = [n for n in self.nodes.values() if n.alive and n.core.is_leader]
        return max(leaders, key=lambda n: n.core.epoch) if leaders else None

    def propose(self, count: int = 1) -> tuple[Node, OffsetAndEpoch] | None:
        node = self.leader()
        if node is None:
            return None
        payloads = []
        for _ in range(count):
            self.proposals += 1
            payloads.append(b"%d:%d" % (self.seed, self.proposals))
        result = node.core.propose(payloads, self.now)
        self.pump(node)
        return (node, result) if isinstance(result, OffsetAndEpoch) else None

    def is_committed(self, position: OffsetAndEpoch) -> bool:
        return (
            position.offset < len(self.committed)
            and self.committed[position.offset][0] == position.epoch
        )

    # -- invariants -------------------------------------------------------------------------------
    def check_invariants(self) -> None:
        for node in self.nodes.values():
            stored = node.store.read()
            if stored is not None:
                if stored.epoch < node.stored_epoch_seen:
                    self.fail(f"node {node.node_id}: quorum-state epoch went back")
                node.stored_epoch_seen = stored.epoch
            if not node.alive:
                continue
            core = node.core
            if core.epoch < node.epoch_seen:
                self.fail(f"node {node.node_id}: epoch went back from {node.epoch_seen}")
            node.epoch_seen = core.epoch
            if core.is_leader:
                if not node.voter:
                    self.fail(f"observer {node.node_id} became leader")
                first = self.leaders.setdefault(core.epoch, node.node_id)
                if first != node.node_id:
                    self.fail(f"two leaders in epoch {core.epoch}: {first} and {node.node_id}")
            self._observe_high_watermark(node)
        committed = len(self.committed)
        durable = sum(1 for n in self.nodes.values() if n.voter and self._durable_has(n, committed))
        if durable * 2 <= len(self.voter_ids):
            self.fail(
                f"only {durable} of {len(self.voter_ids)} voters hold the committed "
                f"offset {committed} durably"
            )

    def _observe_high_watermark(self, node: Node) -> None:
        hw = node.core.high_watermark
        if hw < node.hw_seen:
            self.fail(f"node {node.node_id}: high watermark went back {node.hw_seen} -> {hw}")
        if hw > node.hw_seen:
            self._record_committed(node, node.hw_seen, hw)
            node.hw_seen = hw

    def _record_committed(self, node: Node, start: int, end: int) -> None:
        log = node.log
        start = max(start, log.log_start_offset)
        if start > len(self.committed):
            self.fail(
                f"node {node.node_id}: high watermark {end} skips unknown committed "
                f"offsets from {len(self.committed)}"
            )
        for e in log.read(start, end - start):
            if e.offset < len(self.committed):
                if self.committed[e.offset] != (e.epoch, e.payload, e.control):
                    self.fail(
                        f"node {node.node_id}: committed offset {e.offset} differs: "
                        f"{self.committed[e.offset]} vs {(e.epoch, e.payload)}"
                    )
            else:
                self.committed.append((e.epoch, e.payload, e.control))
                self.digests.append(chain(self.digests[-1], e.epoch, e.payload))

    def _durable_has(self, node: Node, upto: int) -> bool:
        log = node.log
        if log.flushed_offset < upto:
            return False
        if upto == 0 or upto < log.log_start_offset:
            return True
        return log.epoch_at(upto - 1) == self.committed[upto - 1][0]

    def _apply(self, node: Node, e) -> None:
        if e.offset != node.sm.count:
            self.fail(f"node {node.node_id} applied offset {e.offset} after {node.sm.count}")
        if e.offset >= len(self.committed) or self.committed[e.offset] != (
            e.epoch,
            e.payload,
            e.control,
        ):
            self.fail(f"node {node.node_id} applied {e} which is not the committed entry")
        node.sm = StateMachine(e.offset + 1, chain(node.sm.digest, e.epoch, e.payload))

    def _check_snapshot(self, node: Node, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        sm = StateMachine.load(data)
        n = snapshot_id.offset
        if (
            sm.count != n
            or n >= len(self.digests)
            or self.digests[n] != sm.digest
            or (n and self.committed[n - 1][0] != snapshot_id.epoch)
        ):
            self.fail(f"node {node.node_id}: snapshot {snapshot_id} differs from the committed log")

    def _check_durable(self, node: Node) -> None:
        """After a crash the surviving log must agree with every committed entry it holds."""
        log = node.log
        for e in log.read(log.log_start_offset, len(self.committed)):
            if (
                e.offset < len(self.committed)
                and node.voter
                and e.offset < node.hw_seen
                and self.committed[e.offset] != (e.epoch, e.payload, e.control)
            ):
                self.fail(f"node {node.node_id}: durable committed entry {e.offset} differs")
