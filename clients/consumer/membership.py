"""A consumer's membership in its group (Kafka's AbstractCoordinator + ConsumerCoordinator, the
classic eager protocol) as a pure core: responses and `now_ms` in, requests and callbacks out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clients.consumer.membership_messages import (  # noqa: F401  (re-exported: callers import here)
    Assign,
    CoordinatorUnknown,
    Effect,
    Fatal,
    Heartbeat,
    JoinedMember,
    JoinGroup,
    JoinResult,
    LeaveGroup,
    MembershipConfig,
    NeedPartitionCounts,
    Revoke,
    SyncGroup,
    SyncResult,
)
from clients.errors import ErrorCode, error_name
from clients.group.assignors import assign
from clients.group.protocol import (
    NO_GENERATION,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from clients.types import TopicPartition

# The rules (Kafka's, in one place):
# - Subscribing starts a join. JoinGroup goes out with "" the first time; MEMBER_ID_REQUIRED
#   brings the id to join again with at once. The leader member (the JoinGroup answer names it)
#   asks the driver for the partition counts of every member's topics (NeedPartitionCounts), runs
#   the first protocol all members share and sends the assignments in its SyncGroup; the others
#   send an empty one. The SyncGroup answer is this member's assignment: Assign.
# - Eager: before every rejoin the member gives back everything it owns (Revoke, a callback the
#   user's poll runs, committing first with auto-commit) and joins only once `revoked` is called.
#   While it waits it keeps heartbeating: the generation is still its own.
# - Stable: a Heartbeat every heartbeat_interval_ms. REBALANCE_IN_PROGRESS -> revoke and rejoin;
#   ILLEGAL_GENERATION (keep the member id) and UNKNOWN_MEMBER_ID (forget it) -> the partitions
#   are lost (Revoke with lost=True: never committed, the generation is gone) and it rejoins.
#   FENCED_INSTANCE_ID, and every error Kafka treats as fatal, stop the member (Fatal).
# - NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and network errors: the driver looks the
#   coordinator up again (CoordinatorUnknown) and the request is retried after retry_backoff_ms.
#   No heartbeat answer for session_timeout_ms means the same.
# - The subscription changing (a pattern matched a new topic), or, on the leader, the partition
#   count of a group topic changing, starts a rebalance; a change while joining is looked at once
#   the join is over.
# - No poll for max_poll_interval_ms: leave the group (LeaveGroup, dynamic members only) and
#   forget the generation; the next poll rejoins, reporting the old partitions as lost.
# - Leaving (close, unsubscribe): LeaveGroup for a dynamic member; a static member
#   (group_instance_id) only goes quiet, so a restart within session_timeout_ms keeps its place.

UNJOINED = "unjoined"  # not a member: nothing subscribed, left, or fatal
REVOKING = "revoking"  # a rejoin waits for the user's revocation callback
JOINING = "joining"  # JoinGroup in flight, or waiting to go out
ASSIGNING = "assigning"  # the leader waits for partition counts to run its assignor
SYNCING = "syncing"  # SyncGroup in flight
STABLE = "stable"  # has its assignment; heartbeats

E = ErrorCode
# Answers that mean "ask someone else": the driver forgets the coordinator it knew.
COORDINATOR_ERRORS = frozenset(
    {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.NETWORK_EXCEPTION, E.REQUEST_TIMED_OUT}
)
_RETRY_LATER = COORDINATOR_ERRORS | {E.COORDINATOR_LOAD_IN_PROGRESS}


class Membership:
    """Feed it: `subscribe`, `note_poll`, `tick` at `next_deadline_ms`, each request's answer
    (`on_join`, `on_sync`, `on_heartbeat`; a network failure as its error code), `revoked` once
    a Revoke's callback ran, `leave` to go. Each returns the effects to carry out, in order."""

    def __init__(self, config: MembershipConfig, now_ms: int) -> None:
        self.config = config
        self.state = UNJOINED
        self.subscription: frozenset[str] | None = None
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol = ""
        self.leader_id = ""
        self.owned: tuple[TopicPartition, ...] = ()
        self.lost = False  # owned's generation is gone
        self.poll_expired_at: int | None = None
        self._revoke_pending = False
        self.fatal: Fatal | None = None
        self._previous: tuple[tuple[TopicPartition, ...], int] = ((), NO_GENERATION)
        self._inflight: JoinGroup | SyncGroup | None = None
        self._retry_at = 0
        self._joined_topics: frozenset[str] = frozenset()
        self._members: dict[str, Subscription] = {}
        self.leader_counts: dict[str, int] | None = None
        self._hb_inflight: Heartbeat | None = None
        self._hb_next_at = now_ms
        self._hb_received_at = now_ms
        self._last_poll = now_ms
        self._out: list[Effect] = []

    # -- what the consumer asks -----------------------------------------------------------------
    def subscribe(self, topics: Iterable[str], now_ms: int) -> list[Effect]:
        topics = frozenset(topics)
        if topics != self.subscription:
            first = self.subscription is None
            self.subscription = topics
            if first:
                self._last_poll = max(self._last_poll, now_ms)
            if (
                self.state in (UNJOINED, STABLE)
                and self.poll_expired_at is None
                and self.fatal is None
            ):
                self._rejoin()
            # JOINING / ASSIGNING / SYNCING: looked at when the join is over.
        return self._flush(now_ms)

    def note_poll(self, now_ms: int) -> list[Effect]:
        """The user polled at `now_ms` (idempotent): after a poll timeout, rejoin."""
        self._last_poll = max(self._last_poll, now_ms)
        if self.poll_expired_at is not None and now_ms > self.poll_expired_at:
            self.poll_expired_at = None
            if self.subscription is not None and self.fatal is None:
                self._rejoin()
        return self._flush(now_ms)

    def revoked(self, now_ms: int) -> list[Effect]:
        """The Revoke callback ran: the partitions are given back; the join can go out."""
        self.owned, self.lost, self._revoke_pending = (), False, False
        if self.state == REVOKING:
            self.state = JOINING
        return self._flush(now_ms)

    def leave(self, now_ms: int) -> list[Effect]:
        """Close or unsubscribe (the caller already ran the revocation callback)."""
        if self.member_id and self.config.group_instance_id is None and self.state != UNJOINED:
            self._out.append(LeaveGroup(self.member_id))
        self._reset_generation(keep_member_id=False)
        self.subscription = None
        self.state = UNJOINED
        self.owned, self.lost, self.poll_expired_at = (), False, None
        self._revoke_pending = False
        self._previous = ((), NO_GENERATION)
        return self._flush(now_ms)

    def commit_identity(self) -> tuple[int, str, str | None] | None:
        """(generation, member_id, group_instance_id) a commit carries; (-1, "", None) without a
        subscription (manual assignment); None while a rebalance is under way (Kafka refuses to
        commit then: the partitions may already be someone else's)."""
        if self.subscription is None and self.state == UNJOINED:
            return (NO_GENERATION, "", None)
        if self.state in (STABLE, REVOKING) and self.generation >= 0 and not self.lost:
            return (self.generation, self.member_id, self.config.group_instance_id)
        return None

    def on_commit_error(self, error: int, now_ms: int) -> list[Effect]:
        """A commit answered with a membership error: the same reaction as a heartbeat's."""
        if error in (
            E.UNKNOWN_MEMBER_ID,
            E.ILLEGAL_GENERATION,
            E.REBALANCE_IN_PROGRESS,
            E.FENCED_INSTANCE_ID,
        ) and self.state in (STABLE, REVOKING):
            self._membership_error(error, "")
        return self._flush(now_ms)

    def on_metadata(self, partition_counts: Mapping[str, int], now_ms: int) -> list[Effect]:
        """Fresh partition counts; the leader rebalances when one of the group's topics changed
        (a topic created, deleted or given more partitions)."""
        snapshot = self.leader_counts
        if self.state == STABLE and snapshot is not None and self.leader_id == self.member_id:
            if any(partition_counts.get(t, 0) != n for t, n in snapshot.items()):
                self._rejoin()
        return self._flush(now_ms)

    # -- answers --------------------------------------------------------------------------------
    def on_join(self, sent: JoinGroup, result: JoinResult, now_ms: int) -> list[Effect]:
        if sent is not self._inflight:
            return self._flush(now_ms)  # an answer to a request we gave up on
        self._inflight = None
        error = result.error
        if error == E.NONE:
            self.member_id, self.generation = result.member_id, result.generation
            self.protocol, self.leader_id = result.protocol_name, result.leader
            if result.leader == result.member_id and not result.skip_assignment:
                self._members = {
                    m.member_id: decode_subscription(m.metadata, m.group_instance_id)
                    for m in result.members
                }
                self.state = ASSIGNING
                topics = sorted({t for s in self._members.values() for t in s.topics})
                self._out.append(NeedPartitionCounts(self.generation, tuple(topics)))
            else:
                self.leader_counts = None
                self._send_sync(())
        elif error == E.MEMBER_ID_REQUIRED:
            self.member_id = result.member_id
        elif error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
            self._reset_generation(keep_member_id=error == E.ILLEGAL_GENERATION)
        elif error == E.REBALANCE_IN_PROGRESS:
            self._retry_at = now_ms + self.config.retry_backoff_ms
        elif error in _RETRY_LATER:
            self._coordinator_trouble(error, result.message, now_ms)
        else:
            self._fail(error, result.message or "JoinGroup refused")
        return self._flush(now_ms)

    def on_partition_counts(
        self, generation: int, counts: Mapping[str, int], now_ms: int
    ) -> list[Effect]:
        if self.state != ASSIGNING or generation != self.generation:
            return self._flush(now_ms)
        known = {t: n for t, n in counts.items() if n > 0}
        try:
            result = assign(self.protocol, known, self._members)
        except ValueError as exc:
            self._fail(E.INCONSISTENT_GROUP_PROTOCOL, str(exc))
            return self._flush(now_ms)
        topics = {t for s in self._members.values() for t in s.topics}
        self.leader_counts = {t: counts.get(t, 0) for t in topics}
        self._members = {}
        self._send_sync(
            tuple(
                (m, encode_assignment(Assignment(tuple(tps)))) for m, tps in sorted(result.items())
            )
        )
        return self._flush(now_ms)

    def on_sync(self, sent: SyncGroup, result: SyncResult, now_ms: int) -> list[Effect]:
        if sent is not self._inflight:
            return self._flush(now_ms)
        self._inflight = None
        error = result.error
        if error == E.NONE:
            partitions = tuple(sorted(decode_assignment(result.assignment).partitions))
            self.owned, self.lost = partitions, False
            self._previous = (partitions, self.generation)
            self.state = STABLE
            self._hb_inflight = None
            self._hb_next_at = now_ms + self.config.heartbeat_interval_ms
            self._hb_received_at = now_ms
            self._out.append(Assign(partitions, self.generation))
            if self._joined_topics != self.subscription:
                self._rejoin()  # subscribed to something else meanwhile
        elif error == E.REBALANCE_IN_PROGRESS:
            self.state = JOINING
        elif error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
            self._reset_generation(keep_member_id=error == E.ILLEGAL_GENERATION)
            self.state = JOINING
        elif error in _RETRY_LATER:
            self.state = JOINING
            self._coordinator_trouble(error, result.message, now_ms)
        else:
            self._fail(error, result.message or "SyncGroup refused")
        return self._flush(now_ms)

    def on_heartbeat(self, sent: Heartbeat, error: int, now_ms: int) -> list[Effect]:
        if sent is not self._hb_inflight:
            return self._flush(now_ms)
        self._hb_inflight = None
        if sent.generation != self.generation or sent.member_id != self.member_id:
            return self._flush(now_ms)  # the member moved on since it was sent
        if error in (E.NONE, E.REBALANCE_IN_PROGRESS):
            self._hb_received_at = now_ms
        if error == E.NONE:
            pass
        elif error in _RETRY_LATER:
            self._hb_next_at = now_ms + self.config.retry_backoff_ms
            if error != E.COORDINATOR_LOAD_IN_PROGRESS:
                self._out.append(CoordinatorUnknown(f"heartbeat: {error_name(error)}"))
        else:
            self._membership_error(error, "heartbeat")
        return self._flush(now_ms)

    # -- time -----------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> list[Effect]:
        if self.fatal is not None or self.state == UNJOINED:
            return self._flush(now_ms)
        if now_ms - self._last_poll > self.config.max_poll_interval_ms:
            # Kafka's heartbeat thread does this: the user stopped polling, so give the
            # partitions to someone who reads them.
            if self.member_id and self.config.group_instance_id is None:
                self._out.append(LeaveGroup(self.member_id))
            self._reset_generation(keep_member_id=False)
            self.state = UNJOINED
            self.lost = True
            self._previous = ((), NO_GENERATION)
            self.poll_expired_at = now_ms
        elif (
            self._heartbeating() and now_ms - self._hb_received_at > self.config.session_timeout_ms
        ):
            self._hb_received_at = now_ms
            self._hb_inflight = None
            self._out.append(CoordinatorUnknown("no heartbeat answer within the session timeout"))
        return self._flush(now_ms)

    def next_deadline_ms(self) -> int | None:
        if self.fatal is not None or self.state == UNJOINED:
            return None
        times = [self._last_poll + self.config.max_poll_interval_ms + 1]
        if self.state == JOINING and self._inflight is None:
            times.append(self._retry_at)
        if self._heartbeating():
            times.append(self._hb_received_at + self.config.session_timeout_ms + 1)
            if self._hb_inflight is None:
                times.append(self._hb_next_at)
        return min(times)

    # -- inside ---------------------------------------------------------------------------------
    def _heartbeating(self) -> bool:
        return self.state in (STABLE, REVOKING) and self.generation >= 0 and bool(self.member_id)

    def _rejoin(self) -> None:
        """Start a rebalance from this side: give back what it owns first (eager)."""
        if self.state == REVOKING:
            return
        if self._revoke_pending:  # asked for already (before a poll timeout)
            self.state = REVOKING
        elif self.owned:
            self.state = REVOKING
            self._revoke_pending = True
            self._out.append(Revoke(self.owned, self.lost))
        else:
            self.lost = False
            self.state = JOINING

    def _membership_error(self, error: int, what: str) -> None:
        if error == E.REBALANCE_IN_PROGRESS:
            if self.state == STABLE:
                self._rejoin()
        elif error in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
            self._reset_generation(keep_member_id=error == E.ILLEGAL_GENERATION)
            self.lost = True
            self._previous = ((), NO_GENERATION)  # someone else may own them by now
            if self.state == STABLE:
                self._rejoin()
            elif self.state == REVOKING:
                # The revocation already asked for will be reported as given back; what was
                # owned is gone either way, and the join after it starts a new generation.
                pass
        else:
            self._fail(error, f"{what} refused" if what else "")

    def _reset_generation(self, keep_member_id: bool) -> None:
        self.generation = NO_GENERATION
        if not keep_member_id:
            self.member_id = ""
        self._inflight = None
        self._hb_inflight = None
        self.leader_counts = None

    def _coordinator_trouble(self, error: int, message: str, now_ms: int) -> None:
        self._retry_at = now_ms + self.config.retry_backoff_ms
        if error != E.COORDINATOR_LOAD_IN_PROGRESS:
            self._out.append(CoordinatorUnknown(f"{error_name(error)}: {message}".rstrip(": ")))

    def _fail(self, error: int, message: str) -> None:
        hint = {
            E.FENCED_INSTANCE_ID: "another consumer runs with the same group_instance_id",
            E.INVALID_SESSION_TIMEOUT: f"session_timeout_ms={self.config.session_timeout_ms} "
            "is outside the broker's group.min/max.session."
            "timeout.ms",
            E.INCONSISTENT_GROUP_PROTOCOL: "no partition assignor in common with the "
            "group's other members",
        }.get(error, "")
        text = "; ".join(x for x in (message, hint) if x)
        self.fatal = Fatal(error, f"group '{self.config.group_id}': {text}")
        self.state = UNJOINED
        self._inflight = self._hb_inflight = None
        self._out.append(self.fatal)

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...]) -> None:
        self.state = SYNCING
        self._inflight = SyncGroup(
            self.generation,
            self.member_id,
            self.config.group_instance_id,
            self.protocol,
            assignments,
        )
        self._out.append(self._inflight)

    def _protocols(self) -> tuple[tuple[str, bytes], ...]:
        # Eager members own nothing when they join; what they had last is still sent, as Kafka's
        # StickyAssignor sends it in its user data, so the sticky assignor can keep it.
        owned, generation = self._previous
        sub = encode_subscription(
            Subscription(tuple(sorted(self.subscription or ())), owned, generation)
        )
        return tuple((name, sub) for name in self.config.assignors)

    def _flush(self, now_ms: int) -> list[Effect]:
        """Send what the state calls for now, then hand over everything collected."""
        if self.fatal is None:
            if self.state == JOINING and self._inflight is None and now_ms >= self._retry_at:
                self._joined_topics = self.subscription or frozenset()
                self._inflight = JoinGroup(
                    self.member_id,
                    self._protocols(),
                    self.config.session_timeout_ms,
                    self.config.max_poll_interval_ms,
                    self.config.group_instance_id,
                )
                self._out.append(self._inflight)
            if self._heartbeating() and self._hb_inflight is None and now_ms >= self._hb_next_at:
                self._hb_inflight = Heartbeat(
                    self.generation, self.member_id, self.config.group_instance_id
                )
                self._hb_next_at = now_ms + self.config.heartbeat_interval_ms
                self._out.append(self._hb_inflight)
        out, self._out = self._out, []
        return out
