"""RaftDriver: the one trio loop around a RaftCore: persist, then send, then apply. It wakes at the core's next
deadline or when a message or proposal arrives, steps or ticks the core, then works through
`ready()` in order: persist (a snapshot fetched from the leader, quorum-state, log flush, in a
worker thread), then send, then apply, then `advance`. Outbound requests go to peers' Quorum services through clients.bridge, one task
per send; an answer is stepped into the core, a failure or timeout is dropped (the core resends on
its own timers). Inbound requests (from the servicer) are queued for the loop and wait for the
answer the core produces, matched by request type, requester and request id. Who leads is
published to the user (on_leader_change, wait_leader_change) once the change is durable."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence

import trio

from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.quorum_info import QuorumInfo, ReplicaInfo
from clients.wire import quorum_pb2_grpc
from kraft.latency_histogram import LatencyHistogram
from kraft.raft import codec
from kraft.raft.core import RaftCore
from kraft.raft.log import ElectionStore, Entry, OffsetAndEpoch, RaftLog
from kraft.raft.messages import FetchRequest, Message, error_response
from kraft.raft.ready import LeaderAndEpoch, Ready

_REQUEST_OF = {resp: req for req, resp in codec.RESPONSE_OF.items()}
log = logging.getLogger(__name__)
_MISCONFIGURED = (
    ErrorCode.INCONSISTENT_CLUSTER_ID,
    ErrorCode.INCONSISTENT_VOTER_SET,
    ErrorCode.INVALID_REQUEST,
)


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class _Slot:
    """Where the loop leaves the core's answer to one inbound request."""

    __slots__ = ("done", "answer")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: Message | None = None


class RaftDriver:
    def __init__(
        self,
        core: RaftCore,
        log: RaftLog,
        election_store: ElectionStore,
        peers: dict[int, str],
        clock: Callable[[], int] = monotonic_ms,
        on_commit: Callable[[Sequence[Entry]], None] | None = None,
        on_snapshot_load: Callable[[OffsetAndEpoch, bytes], None] | None = None,
        take_snapshot: Callable[[], bytes] | None = None,
        on_leader_change: Callable[[int | None, int], None] | None = None,
        cluster_id: str = "",
        open_channel: Callable[[str], object] = bridge.open_channel,
    ) -> None:
        """`peers`: node id -> "host:port" of its Quorum service; `cluster_id` goes on every
        request so that a node formatted for another cluster is refused. `on_commit` gets every
        committed entry once, in order (control entries included: state machines skip them);
        `on_snapshot_load` replaces the state machine; `take_snapshot` serialises it;
        `on_leader_change(leader_id, epoch)` is called once the loop runs and then whenever the
        leader this node knows of or its epoch changes (leader_id None: unknown, electing). All
        callbacks run in the loop, between two steps of the core."""
        self.core = core
        self.cluster_id = cluster_id
        self._log = log
        self._store = election_store
        self._peers = dict(peers)
        self._open_channel = open_channel  # TLS with this node's certificate when secured
        self._clock = clock
        self._on_commit = on_commit
        self._on_snapshot_load = on_snapshot_load
        self._take_snapshot = take_snapshot
        self._on_leader_change = on_leader_change
        self._inbox: list[Message] = []
        self._wake = trio.Event()
        self._waiters: dict[tuple, list[_Slot]] = {}
        self._channels: dict[int, object] = {}
        self._stubs: dict[int, quorum_pb2_grpc.QuorumStub] = {}
        self._refusals: dict[int, str] = {}  # peer -> the last refusal it explained
        self._proposed_epochs: dict[int, int] = {}
        # When each of this node's proposals was made: its commit latency (Kafka's raft-metrics
        # commit-latency), read by the metrics endpoint.
        self._proposed_ms: dict[int, int] = {}
        self.commit_latency = LatencyHistogram()
        # Offsets of this node's proposals that committed with another leader's entry.
        self._lost_proposals: set[int] = set()
        self._commit_changed = trio.Event()
        # Held while a Ready is being worked through: its persist runs in a worker thread, and
        # neither the core nor the log may change under it (propose waits for it).
        self._core_lock = trio.Lock()
        # The leader and epoch last published: only after the Ready that made them is persisted.
        self._view = LeaderAndEpoch(None, core.epoch)
        self._view_published = False
        self._view_changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        # End (exclusive) of what the state machine has been given.
        self.committed_end = log.log_start_offset

    # -- the loop ---------------------------------------------------------------------------------
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                while True:
                    await self._process_ready()
                    self._publish_view()
                    await self._wait_for_work()
                    now = self._clock()
                    inbox, self._inbox = self._inbox, []
                    for message in inbox:
                        self.core.step(message, now)
                    deadline = self.core.next_deadline_ms
                    if deadline is not None and now >= deadline:
                        self.core.tick(now)
        finally:
            self._nursery = None
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()

    async def _wait_for_work(self) -> None:
        if not self._inbox:
            deadline = self.core.next_deadline_ms
            timeout = (
                float("inf") if deadline is None else max(0.0, (deadline - self._clock()) / 1000)
            )
            with trio.move_on_after(timeout):
                await self._wake.wait()
        self._wake = trio.Event()

    async def _process_ready(self) -> None:
        core = self.core
        async with self._core_lock:
            while core.has_ready():
                ready = core.ready()
                # 1. persist. fsync can take milliseconds: off the trio thread, so other tasks of
                # the node run meanwhile, but awaited, so nothing is sent or applied before it.
                if (
                    ready.snapshot_to_install is not None
                    or ready.election_state is not None
                    or ready.must_flush
                ):
                    await trio.to_thread.run_sync(self._persist, ready)
                # 2. send
                for message in ready.messages:
                    self._send(message)
                # 3. apply
                await self._apply(ready)
                core.advance(ready)
                if ready.committed or ready.snapshot_to_load is not None:
                    self._commit_changed.set()
                    self._commit_changed = trio.Event()

    def _persist(self, ready: Ready) -> None:
        """Runs in a worker thread while the loop waits for it."""
        if ready.snapshot_to_install is not None:
            self._log.install_snapshot(*ready.snapshot_to_install)
        if ready.election_state is not None:
            self._store.write(ready.election_state)
        if ready.must_flush:
            self._log.flush()

    async def _apply(self, ready: Ready) -> None:
        loaded = ready.snapshot_to_load
        if loaded is not None:
            data = await trio.to_thread.run_sync(self._log.read_snapshot, loaded)
            if self._on_snapshot_load is not None:
                self._on_snapshot_load(loaded, data)
            self.committed_end = max(self.committed_end, loaded.offset)
            # Proposals the snapshot covers cannot be checked entry by entry: count them done.
            for offset in [o for o in self._proposed_epochs if o < loaded.offset]:
                del self._proposed_epochs[offset]
                self._proposed_ms.pop(offset, None)
        if ready.committed:
            if self._on_commit is not None:
                self._on_commit(ready.committed)
            self.committed_end = ready.committed[-1].offset + 1
            if self._proposed_epochs:
                now = self._clock()
                for e in ready.committed:
                    epoch = self._proposed_epochs.pop(e.offset, None)
                    if epoch is not None and epoch != e.epoch:
                        self._lost_proposals.add(e.offset)
                    proposed = self._proposed_ms.pop(e.offset, None)
                    if proposed is not None and epoch == e.epoch:
                        self.commit_latency.observe((now - proposed) / 1000)
        if ready.snapshot_to_take is not None and self._take_snapshot is not None:
            data = self._take_snapshot()  # in the loop: the state machine belongs to it
            await trio.to_thread.run_sync(self._log.create_snapshot, ready.snapshot_to_take, data)

    def _publish_view(self) -> None:
        view = self.core.leader_and_epoch
        if view == self._view and self._view_published:
            return
        self._view, self._view_published = view, True
        self._view_changed.set()
        self._view_changed = trio.Event()
        if self._on_leader_change is not None:
            self._on_leader_change(view.leader_id, view.epoch)

    def _enqueue(self, message: Message) -> None:
        self._inbox.append(message)
        self._wake.set()

    # -- outbound ---------------------------------------------------------------------------------
    def _send(self, message: Message) -> None:
        if type(message) in _REQUEST_OF:
            key = _key(message)
            waiting = self._waiters.get(key)
            if waiting:  # first come, first answered: the core answers in the order it steps
                slot = waiting.pop(0)
                if not waiting:
                    del self._waiters[key]
                slot.answer = message
                slot.done.set()
            return
        if self._nursery is not None and message.dst in self._peers:
            self._nursery.start_soon(self._call, message)

    async def _call(self, message: Message) -> None:
        stub = self._stubs.get(message.dst)
        if stub is None:
            channel = self._channels[message.dst] = self._open_channel(self._peers[message.dst])
            stub = self._stubs[message.dst] = quorum_pb2_grpc.QuorumStub(channel)
        timeout = (self.core.config.request_timeout_ms + getattr(message, "max_wait_ms", 0)) / 1000
        method = getattr(stub, codec.RPC_OF[type(message)])
        try:
            request = codec.to_proto(message)
            request.cluster_id = self.cluster_id
            answer = await bridge.call(method, request, timeout)
        except KraftError as exc:
            if isinstance(message, FetchRequest) and bridge.is_connection_refused(exc):
                # Nobody listens there (a controller killed or restarting): an observer asks
                # another voter after retry.backoff.ms rather than waiting out its fetch timeout,
                # as Kafka's observers do; a voter elects soon, and pre-vote makes sure the other
                # voters cannot reach that leader either. A timeout is no such evidence (the
                # leader may only be paused): it waits for the fetch timeout as before.
                self._enqueue(
                    error_response(
                        message, message.dst, self.core.epoch, None, ErrorCode.NETWORK_EXCEPTION
                    )
                )
            return  # otherwise the core resends on its timers
        response = codec.from_proto(answer)
        if (
            response.error in _MISCONFIGURED
            and self._refusals.get(message.dst) != response.error_message
        ):
            # A peer refused our request for a reason no retry cures (another cluster, not a
            # voter there, a field out of range): tell the operator once per new reason.
            self._refusals[message.dst] = response.error_message
            log.warning(
                "node %d refused our %s: %s",
                message.dst,
                type(message).__name__,
                response.error_message,
            )
        self._enqueue(response)

    # -- inbound (from the Quorum servicer) -------------------------------------------------------
    async def handle_request(self, request: Message) -> Message:
        """Step an inbound request into the core and return the core's answer. A parked Fetch
        waits up to its max_wait_ms (at most this node's own fetch_max_wait_ms). If the loop
        does not answer in time (stalled, or not running), the answer is the response type with
        error REQUEST_TIMED_OUT and this node's epoch and leader, which the requester's core
        handles like any error answer."""
        slot = _Slot()
        key = _key(request)
        self._waiters.setdefault(key, []).append(slot)
        self._enqueue(request)
        # Answer before the requester's core gives up and resends (request_timeout_ms after its
        # send, on top of a fetch's long poll), so the error reaches a request still waiting.
        wait_ms = min(getattr(request, "max_wait_ms", 0), self.core.config.fetch_max_wait_ms)
        timeout = (wait_ms + max(0, self.core.config.request_timeout_ms - wait_ms) // 2) / 1000
        try:
            with trio.move_on_after(timeout):
                await slot.done.wait()
        finally:
            waiting = self._waiters.get(key)
            if waiting and slot in waiting:
                waiting.remove(slot)
                if not waiting:
                    del self._waiters[key]
        if slot.answer is None:
            # Not stepped yet: drop it, so the core never acts on a request already answered.
            for i, queued in enumerate(self._inbox):
                if queued is request:
                    del self._inbox[i]
                    break
            leader_id, epoch = self.core.leader_and_epoch
            return error_response(
                request, self.core.node_id, epoch, leader_id, ErrorCode.REQUEST_TIMED_OUT
            )
        return slot.answer

    def describe(self) -> QuorumInfo:
        """DescribeQuorum's answer. The core stamps each replica's last fetch with the time it was
        stepped at (this driver's monotonic clock, meaningless elsewhere); the answer gives its age,
        ms since that fetch, as of now. The leader's own row is 0, as in Kafka's."""
        info = self.core.describe()
        now = self._clock()

        def age(r: ReplicaInfo) -> ReplicaInfo:
            if r.replica_id == info.node_id:
                return dataclasses.replace(r, last_fetch_ms=0)
            if r.last_fetch_ms is None:
                return r
            return dataclasses.replace(r, last_fetch_ms=max(0, now - r.last_fetch_ms))

        return dataclasses.replace(
            info, voters=tuple(map(age, info.voters)), observers=tuple(map(age, info.observers))
        )

    # -- leadership, as published by the loop (after the Ready that changed it is persisted) -------
    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self._view

    @property
    def leader_id(self) -> int | None:
        return self._view.leader_id

    @property
    def epoch(self) -> int:
        return self._view.epoch

    @property
    def is_leader(self) -> bool:
        return self._view.leader_id == self.core.node_id

    async def wait_leader_change(self) -> LeaderAndEpoch:
        """Return the new (leader_id, epoch) once it differs from the one published at the call;
        an active controller waits on this to notice it lost leadership."""
        await self._view_changed.wait()
        return self._view

    def leader_epoch_start_offset(self) -> int | None:
        """As leader, the offset of this epoch's LeaderChange entry (None otherwise). Every entry
        before it comes from older epochs; the state machine has replayed them all once
        `committed_end` passes it (`await wait_committed(offset)`), and only then should an active
        controller serve: Kafka's controller waits for the same."""
        if not self.is_leader:
            return None
        return self.core.leader_epoch_start_offset

    # -- clients of the state machine -------------------------------------------------------------
    async def propose(self, payloads: Iterable[bytes]) -> int:
        """Append as leader; returns the offset of the last entry. Raises
        KraftError(NOT_LEADER_OR_FOLLOWER) elsewhere."""
        async with self._core_lock:  # not while a Ready's flush runs in a worker thread
            result = self.core.propose(list(payloads), self._clock())
            if not isinstance(result, ErrorCode):
                self._proposed_epochs[result.offset] = result.epoch
                self._proposed_ms[result.offset] = self._clock()
        if isinstance(result, ErrorCode):
            raise KraftError(
                result,
                f"node {self.core.node_id} is not the leader (leader: {self.core.leader_id})",
            )
        self._wake.set()
        return result.offset

    async def resign(self) -> None:
        """Step down as leader and ask the other voters to elect now (EndQuorumEpoch), as a
        leader shutting down gracefully does. Does nothing on a node that does not lead."""
        async with self._core_lock:
            self.core.resign(self._clock())
        self._wake.set()

    async def wait_committed(self, offset: int) -> None:
        """Return once the entry at `offset` is committed and applied here. If it was this node's
        proposal and another leader's entry committed there instead, raise
        KraftError(NOT_LEADER_OR_FOLLOWER): the proposal is lost."""
        while self.committed_end <= offset:
            await self._commit_changed.wait()
        # Settled when applied (_apply), which needs no read of a log a worker thread may change.
        if offset in self._lost_proposals:
            self._lost_proposals.discard(offset)
            raise KraftError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"offset {offset} committed in another epoch: the proposal was lost",
            )


def _key(message: Message) -> tuple:
    """Pairs a request with its answer: (request type, requester, request id or pre-vote flag)."""
    if type(message) in _REQUEST_OF:
        return (
            _REQUEST_OF[type(message)],
            message.dst,
            getattr(message, "request_id", getattr(message, "pre_vote", None)),
        )
    return (
        type(message),
        message.src,
        getattr(message, "request_id", getattr(message, "pre_vote", None)),
    )
