"""The consumer's group driver (the I/O half of Kafka's ConsumerCoordinator): runs the Membership
core in a trio task, sends its requests, commits, and queues the rebalance callbacks poll runs."""

from __future__ import annotations

import logging
import re
from collections import deque
from dataclasses import dataclass

import trio

from clients.cluster import Cluster
from clients.consumer.clock import now_ms
from clients.consumer.coordinator_commits import CoordinatorCommits
from clients.consumer.fetcher import Fetcher
from clients.consumer.membership import (
    Assign,
    CoordinatorUnknown,
    Fatal,
    Heartbeat,
    JoinedMember,
    JoinGroup,
    JoinResult,
    LeaveGroup,
    Membership,
    MembershipConfig,
    NeedPartitionCounts,
    Revoke,
    SyncGroup,
    SyncResult,
)
from clients.consumer.read_committed import READ_COMMITTED
from clients.errors import ErrorCode, KraftError
from clients.group.protocol import PROTOCOL_TYPE
from clients.group_rpc import CoordinatorClient, deadline_after
from clients.rate_limited_log import RateLimitedLog
from clients.types import TopicPartition
from clients.wire import group_pb2

log = logging.getLogger(__name__)
E = ErrorCode
RETRY_BACKOFF_S = 0.1
# Kafka gives a JoinGroup the rebalance timeout plus this: the coordinator parks it that long.
JOIN_SLACK_MS = 5_000
METADATA_RETRY_MS = 1_000


class ConsumerRebalanceListener:
    """Override what you need. Each method gets a set of TopicPartition; with AsyncConsumer they
    may be `async def`. Called from poll (and close / unsubscribe), in the polling thread."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """Before a rebalance takes them away: commit what was processed here."""

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        """After a rebalance: seek here to start somewhere else than the committed offset."""

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        """They already belong to someone else (the member was dropped): do not commit.
        By default the same as on_partitions_revoked, as Kafka does."""
        self.on_partitions_revoked(partitions)


@dataclass
class Callback:
    kind: str  # "revoke" or "assign"
    partitions: tuple[TopicPartition, ...]
    lost: bool = False
    ready: bool = True  # an assignment: once its positions are set


class ConsumerCoordinator(CoordinatorCommits):
    def __init__(
        self,
        cluster: Cluster,
        fetcher: Fetcher,
        config: MembershipConfig,
        *,
        client_id: str,
        enable_auto_commit: bool,
        auto_commit_interval_ms: int,
        metadata_max_age_ms: int,
        request_timeout_ms: int,
    ) -> None:
        self.config = config
        self.group_id = config.group_id
        self.cluster, self.fetcher = cluster, fetcher
        self.client_id = client_id
        self.core = Membership(config, now_ms())
        self.rpc = CoordinatorClient(cluster, config.group_id)
        self.auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.timeout_s = request_timeout_ms / 1000
        # The user's side (any thread): what to subscribe to, and when poll was last called.
        self.wanted: frozenset[str] | re.Pattern | None = None
        self.listener = None
        self.last_poll_ms = now_ms()
        # Under fetcher.cond: the callbacks poll runs, in order; what the user was told it has.
        self.callbacks: deque[Callback] = deque()
        self.user_assignment: frozenset[TopicPartition] = frozenset()
        self.error: KraftError | None = None
        self.commits_done: deque = deque()  # (callback, offsets, error) for the user's poll
        self._applied: frozenset[str] | re.Pattern | None = None
        self._committed: dict[TopicPartition, int] = {}
        self._commit_lock = trio.Lock()
        self._next_auto_commit = now_ms() + auto_commit_interval_ms
        self._next_metadata = 0
        self._refreshing = False
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        # Until a dead coordinator is fenced every retry finds it gone again, several times a
        # second: one line per 10 s tells the user as much.
        self.coordinator_lost = RateLimitedLog(logger=log)

    @property
    def require_stable(self) -> bool:
        """Kafka's consumer asks for stable offsets under read_committed: a partition whose
        previous owner's transaction (holding its offsets) has not ended yet is waited for, not
        read from the offset before it, which would process again what that transaction may
        still commit as consumed (KIP-447)."""
        return self.fetcher.isolation_level == READ_COMMITTED

    def wake(self) -> None:
        """Any thread: the loop looks at `wanted`, the last poll and the clock again."""
        self.fetcher.home.call_soon(self._wake)

    def _wake(self) -> None:
        ev, self._changed = self._changed, trio.Event()
        ev.set()

    # -- the loop -----------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                wait_ms = self._step(now_ms())
                # Taken after the step: its own wake-ups (each _apply's) are accounted for by
                # the deadline it just computed; only those of other tasks must end the wait.
                changed = self._changed
                with trio.move_on_after(max(wait_ms, 1) / 1000):
                    await changed.wait()

    def _step(self, now: int) -> int:
        """Feed the core what changed and what time it is; returns how long to sleep (ms)."""
        wanted = self.wanted
        if wanted is not self._applied:
            self._applied = wanted
            if isinstance(wanted, re.Pattern):
                self._next_metadata = now  # resolve the pattern now
            elif wanted is not None:
                self._apply(self.core.subscribe(wanted, now))
        self._apply(self.core.note_poll(self.last_poll_ms))
        self._apply(self.core.tick(now))
        pattern = isinstance(self._applied, re.Pattern)
        times = [self.core.next_deadline_ms()]
        if pattern or self.core.leader_counts is not None:
            if now >= self._next_metadata and not self._refreshing:
                self._refreshing = True
                self._nursery.start_soon(self._refresh_metadata)
            if not self._refreshing:
                times.append(self._next_metadata)
        if self.auto_commit:
            if now >= self._next_auto_commit:
                self._next_auto_commit = now + self.auto_commit_interval_ms
                self._nursery.start_soon(self._auto_commit)
            times.append(self._next_auto_commit)
        return min((t for t in times if t is not None), default=now + 60_000) - now

    def _apply(self, effects: list) -> None:
        """Carry out what the core asked for, then wake the loop: whatever was just fed to the
        core may have moved its next deadline even with no effect out (a JoinGroup answered
        COORDINATOR_LOAD_IN_PROGRESS only sets the time to retry), and the loop sleeps until
        the deadline it computed before."""
        start = self._nursery.start_soon
        f = self.fetcher
        for e in effects:
            if isinstance(e, JoinGroup):
                start(self._join, e)
            elif isinstance(e, SyncGroup):
                start(self._sync, e)
            elif isinstance(e, Heartbeat):
                start(self._heartbeat, e)
            elif isinstance(e, LeaveGroup):
                start(self._send_leave, e, self.timeout_s)
            elif isinstance(e, NeedPartitionCounts):
                start(self._partition_counts, e)
            elif isinstance(e, Revoke):
                with f.cond:
                    self.callbacks.append(Callback("revoke", e.partitions, e.lost))
                    f.notify_locked()
            elif isinstance(e, Assign):
                cb = Callback("assign", e.partitions, ready=False)
                with f.cond:
                    self.callbacks.append(cb)
                start(self._prepare_assignment, cb)
            elif isinstance(e, CoordinatorUnknown):
                self.coordinator_lost.info(
                    "lost",
                    "group %s: looking for the coordinator again (%s)",
                    self.group_id,
                    e.reason,
                )
                self.rpc.invalidate()
            elif isinstance(e, Fatal):
                with f.cond:
                    self.error = KraftError(e.code, e.message)
                    f.notify_locked()
        self._wake()

    # -- requests -----------------------------------------------------------------------------
    async def _join(self, req: JoinGroup) -> None:
        pb = group_pb2.JoinGroupRequest(
            group_id=self.group_id,
            member_id=req.member_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=[group_pb2.Protocol(name=n, metadata=m) for n, m in req.protocols],
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            group_instance_id=req.group_instance_id,
            client_id=self.client_id,
        )
        try:
            resp = await self.rpc.call(
                "JoinGroup", pb, (req.rebalance_timeout_ms + JOIN_SLACK_MS) / 1000
            )
            result = JoinResult(
                resp.error_code,
                resp.member_id,
                resp.generation_id,
                resp.protocol_name,
                resp.leader,
                tuple(
                    JoinedMember(
                        m.member_id,
                        m.group_instance_id if m.HasField("group_instance_id") else None,
                        m.metadata,
                    )
                    for m in resp.members
                ),
                resp.error_message,
                resp.skip_assignment,
            )
        except KraftError as exc:
            result = JoinResult(exc.code, req.member_id, message=exc.message)
        self._apply(self.core.on_join(req, result, now_ms()))

    async def _sync(self, req: SyncGroup) -> None:
        pb = group_pb2.SyncGroupRequest(
            group_id=self.group_id,
            generation_id=req.generation,
            member_id=req.member_id,
            group_instance_id=req.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=req.protocol_name,
            assignments=[
                group_pb2.MemberAssignment(member_id=m, assignment=a) for m, a in req.assignments
            ],
        )
        try:
            resp = await self.rpc.call(
                "SyncGroup", pb, (self.config.max_poll_interval_ms + JOIN_SLACK_MS) / 1000
            )
            result = SyncResult(resp.error_code, resp.assignment, resp.error_message)
        except KraftError as exc:
            result = SyncResult(exc.code, message=exc.message)
        self._apply(self.core.on_sync(req, result, now_ms()))

    async def _heartbeat(self, req: Heartbeat) -> None:
        pb = group_pb2.HeartbeatRequest(
            group_id=self.group_id,
            generation_id=req.generation,
            member_id=req.member_id,
            group_instance_id=req.group_instance_id,
        )
        try:
            error = (await self.rpc.call("Heartbeat", pb, self.timeout_s)).error_code
        except KraftError as exc:
            error = exc.code
        self._apply(self.core.on_heartbeat(req, error, now_ms()))

    async def _send_leave(self, req: LeaveGroup, timeout_s: float) -> None:
        pb = group_pb2.LeaveGroupRequest(
            group_id=self.group_id, members=[group_pb2.MemberIdentity(member_id=req.member_id)]
        )
        with trio.move_on_after(timeout_s):
            try:
                resp = await self.rpc.call("LeaveGroup", pb, timeout_s)
                if resp.error_code:
                    log.info("group %s: LeaveGroup: %s", self.group_id, resp.error_message)
            except KraftError as exc:
                log.info(
                    "group %s: LeaveGroup failed (the session will expire): %s", self.group_id, exc
                )

    async def _partition_counts(self, need: NeedPartitionCounts) -> None:
        """The leader's assignor input, from fresh metadata (retried until it comes, unless the
        generation is over meanwhile)."""
        while True:
            try:
                await self.cluster.refresh(list(need.topics))
                break
            except KraftError as exc:
                log.info("group %s: metadata for the assignment failed: %s", self.group_id, exc)
                if self.core.generation != need.generation:
                    return
                await trio.sleep(RETRY_BACKOFF_S)
        md = self.cluster.metadata
        counts = {t: len(md.partitions_for(t) or ()) for t in need.topics}
        self._apply(self.core.on_partition_counts(need.generation, counts, now_ms()))

    async def _prepare_assignment(self, cb: Callback) -> None:
        """Positions of a new assignment: the committed offset, else auto_offset_reset. Then the
        assign callback may run (a seek in it overrides these)."""
        committed: dict = {}
        while cb.partitions:
            try:
                committed = await self.rpc.fetch_committed(
                    list(cb.partitions),
                    deadline_after(self.timeout_s),
                    require_stable=self.require_stable,
                )
                break
            except KraftError as exc:
                if not exc.retriable:
                    with self.fetcher.cond:
                        self.error = exc
                    break
                log.info("group %s: committed offsets not available yet: %s", self.group_id, exc)
                await trio.sleep(RETRY_BACKOFF_S)
        log.info(
            "group %s: assigned %s; committed (offset, leader epoch) %s",
            self.group_id,
            sorted(cb.partitions),
            {f"{t}-{p}": c for (t, p), c in sorted(committed.items())},
        )
        f = self.fetcher
        with f.cond:
            f.assign_locked(cb.partitions)
            for tp in cb.partitions:
                if committed.get(tp) is not None:
                    f.seek_locked(tp, *committed[tp])
            cb.ready = True
            f.notify_locked()
        f.wake()

    async def _refresh_metadata(self) -> None:
        """Resolve a pattern subscription; on the leader, look for partition count changes."""
        try:
            wanted = self._applied
            if isinstance(wanted, re.Pattern):
                resp = await self.cluster.refresh(None)
                topics = [
                    t.name
                    for t in resp.topics
                    if not t.error_code and not t.is_internal and wanted.fullmatch(t.name)
                ]
                if self._applied is wanted:
                    self._apply(self.core.subscribe(topics, now_ms()))
            snapshot = self.core.leader_counts
            if snapshot:
                if not isinstance(wanted, re.Pattern):
                    await self.cluster.refresh(sorted(snapshot))
                md = self.cluster.metadata
                counts = {t: len(md.partitions_for(t) or ()) for t in snapshot}
                self._apply(self.core.on_metadata(counts, now_ms()))
            self._next_metadata = now_ms() + self.metadata_max_age_ms
        except KraftError as exc:
            log.info("group %s: metadata refresh failed: %s", self.group_id, exc)
            self._next_metadata = now_ms() + METADATA_RETRY_MS
        finally:
            self._refreshing = False
            self._wake()

    # -- what poll, close and unsubscribe call ------------------------------------------------
    def note_poll(self) -> None:
        """The user polled: max.poll.interval.ms starts again; a member that left for want of
        polls rejoins now."""
        self.last_poll_ms = now_ms()
        if self.core.poll_expired_at is not None:
            self.wake()

    def take_callback_locked(self) -> Callback | None:
        if self.callbacks and self.callbacks[0].ready:
            return self.callbacks.popleft()
        return None

    def needs_attention_locked(self) -> bool:
        """A poller should stop waiting for records: a callback to run or an error to raise."""
        return bool(self.callbacks and self.callbacks[0].ready) or self.error is not None

    def callback_done(self, cb: Callback) -> None:
        """Trio thread: the user ran `cb`'s callback; a revocation lets the join go out."""
        f = self.fetcher
        if cb.kind == "revoke":
            with f.cond:
                f.assign_locked([])
                self.user_assignment = frozenset()
            f.wake()
            self._apply(self.core.revoked(now_ms()))
        else:
            with f.cond:
                self.user_assignment = frozenset(cb.partitions)

    async def leave(self, timeout_s: float) -> None:
        """After the revocation callback (close, unsubscribe): LeaveGroup for a dynamic member,
        then forget the assignment and any callback not run yet."""
        self.wanted = self._applied = None
        effects = self.core.leave(now_ms())
        f = self.fetcher
        with f.cond:
            self.callbacks.clear()
            self.user_assignment = frozenset()
            f.assign_locked([])
        f.wake()
        for e in effects:
            if isinstance(e, LeaveGroup):
                await self._send_leave(e, timeout_s)
        self._wake()
