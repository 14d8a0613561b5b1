"""PartitionState: one partition's replication on one broker as a pure core (Kafka's Partition):
the leader's follower states, ISR, maximal ISR and high watermark; the follower's KIP-101 fetch."""

from __future__ import annotations

from dataclasses import dataclass

from broker.replication.memory_log import ReplicaLog
from broker.replication.messages import (
    ACKS_ALL,
    AppendResult,
    Effect,
    EpochEndOffset,
    FetchAnswer,
    FetchDecision,
    FollowerFetch,
    HighWatermarkAdvanced,
    IsrChanged,
    Truncated,
)
from broker.replication.partition_isr import PartitionIsr, PendingIsr
from clients.errors import ErrorCode

# Rules, Kafka's (Partition.scala, AbstractFetcherThread), in one place:
# - The leader answers a follower's fetch only in its own leader epoch: an older epoch is
#   FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (we have not heard of it yet).
# - A fetch whose (fetch_offset, last_fetched_epoch) is not on the leader's log gets the diverging
#   epoch {largest epoch <= last_fetched_epoch, its end offset}; the follower truncates there
#   (or, lacking that epoch, to its own end of the largest epoch below it, then asks again). It
#   never truncates blindly to its high watermark (KIP-101), except when the leader's answer has
#   no epoch at all, Kafka's fallback. Only a fetch that does not diverge moves the follower state.
# - A follower whose log ends below the leader's log start (retention ran on the leader) is
#   answered OFFSET_OUT_OF_RANGE with that log start; it empties its log, starts it there and
#   fetches on (Kafka's truncateFullyAndStartAt).
# - A follower is caught up when it has fetched up to the leader's log end offset as of some fetch
#   within replica.lag.time.max.ms (lastCaughtUpTimeMs); an ISR member that is not is proposed for
#   removal. A follower joins once its log end offset reaches the high watermark and this leader
#   epoch's start offset (so it holds every record any earlier leader committed).
# - ISR changes go to the controller (AlterPartition, partition epoch checked), one at a time.
#   Until settled, the HW is the minimum log end offset over the *maximal* ISR (ISR plus pending
#   additions; a pending removal still counts): never fewer replicas than the controller may count.
# - acks=all answers once the high watermark passes the batch; it is refused up front, and
#   answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, while the ISR is smaller than min.insync.replicas.

LEADER, FOLLOWER, NONE = "leader", "follower", "none"


@dataclass(frozen=True)
class ReplicationConfig:
    replica_lag_time_max_ms: int = 30_000
    min_insync_replicas: int = 1
    alter_partition_timeout_ms: int = 5_000  # unanswered by then: send the same proposal again
    alter_partition_backoff_ms: int = 100  # after INELIGIBLE_REPLICA, wait before proposing


@dataclass
class ReplicaState:
    """The leader's view of one follower, reset at each new leader epoch."""

    log_end_offset: int = -1  # its fetch offset in this leader epoch; -1: not yet known
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_end_offset: int = -1
    broker_epoch: int = -1


class PartitionState(PartitionIsr):
    """Drive it with `become_leader` / `become_follower` (from metadata), `append_as_leader`,
    `handle_follower_fetch`, `tick` (every few hundred ms: ISR shrink, AlterPartition resends),
    `on_alter_partition_result`; a follower uses `fetch_request` and `handle_fetch_response`.
    Every call returns the effects to carry out; after any call, re-check acks=all waiters with
    `acks_satisfied`. Log writes go through the ReplicaLog handed in."""

    def __init__(
        self,
        replica_id: int,
        log: ReplicaLog,
        config: ReplicationConfig,
        broker_epoch: int = -1,
        high_watermark: int = 0,
    ) -> None:
        self.replica_id = replica_id
        self.broker_epoch = broker_epoch
        self.config = config
        self._log = log
        self.role = NONE
        self.leader_id: int | None = None
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        # A restart starts from the checkpointed HW, never past what the log still holds.
        self.high_watermark = max(log.log_start_offset, min(high_watermark, log.log_end_offset))
        self.leader_epoch_start_offset = -1
        self._followers: dict[int, ReplicaState] = {}
        self._pending: PendingIsr | None = None
        self._propose_after_ms = 0

    # -- views ------------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        """Kept in the log (one value: the log serves reads up to it and checkpoints it)."""
        return self._log.high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._log.high_watermark = offset

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    @property
    def pending_isr(self) -> tuple[int, ...] | None:
        return self._pending.proposal.new_isr if self._pending else None

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        proposed = self._pending.proposal.new_isr if self._pending else ()
        return self.isr + tuple(r for r in proposed if r not in self.isr)

    def follower_state(self, replica_id: int) -> ReplicaState | None:
        return self._followers.get(replica_id)

    # -- metadata ---------------------------------------------------------------------------------
    def become_leader(
        self,
        leader_epoch: int,
        partition_epoch: int,
        isr: tuple[int, ...],
        replicas: tuple[int, ...],
        now_ms: int,
    ) -> tuple[Effect, ...]:
        """Stale metadata (an older leader epoch, or an older partition epoch in ours) is
        ignored. The same leader epoch with a newer partition epoch updates the ISR and
        assignment in place (it replaces any proposal in flight)."""
        if leader_epoch < self.leader_epoch:
            return ()
        if leader_epoch == self.leader_epoch and self.role != NONE:
            if not self.is_leader or partition_epoch <= self.partition_epoch:
                return ()
            return self._update_assignment(partition_epoch, tuple(isr), tuple(replicas), now_ms)
        start = self._log.log_end_offset
        self._log.assign_epoch_start(leader_epoch, start)
        self.role, self.leader_id = LEADER, self.replica_id
        self.leader_epoch, self.partition_epoch = leader_epoch, partition_epoch
        self.replicas, self.isr = tuple(replicas), tuple(isr)
        self.leader_epoch_start_offset = start
        self._pending, self._propose_after_ms = None, 0
        # Followers must fetch in this epoch before they count; ISR members get a full lag
        # period to do so before they can be shrunk away.
        self._followers = {
            r: self._fresh_follower(r, now_ms) for r in self.replicas if r != self.replica_id
        }
        return (IsrChanged(self.isr, partition_epoch),) + self._maybe_advance_high_watermark()

    def become_follower(
        self, leader_id: int | None, leader_epoch: int, partition_epoch: int, now_ms: int
    ) -> tuple[Effect, ...]:
        """No truncation here: the first fetch finds the divergence (KIP-101). `leader_id` None
        (or -1): the partition has no leader in this epoch; nothing is fetched."""
        if leader_epoch < self.leader_epoch or (
            leader_epoch == self.leader_epoch and self.role != NONE
        ):
            if leader_epoch == self.leader_epoch and self.role == FOLLOWER:
                self.partition_epoch = max(self.partition_epoch, partition_epoch)
            return ()
        self.role = FOLLOWER
        self.leader_id = leader_id if leader_id is not None and leader_id >= 0 else None
        self.leader_epoch, self.partition_epoch = leader_epoch, partition_epoch
        self.isr, self._followers, self._pending = (), {}, None
        self.leader_epoch_start_offset = -1
        return ()

    def _fresh_follower(self, replica_id: int, now_ms: int) -> ReplicaState:
        return ReplicaState(
            last_caught_up_ms=now_ms if replica_id in self.isr else 0,
            last_fetch_ms=now_ms,
            last_fetch_leader_end_offset=self._log.log_end_offset,
        )

    def _update_assignment(
        self, partition_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...], now_ms: int
    ) -> tuple[Effect, ...]:
        self.replicas = replicas
        self._followers = {
            r: self._followers.get(r) or self._fresh_follower(r, now_ms)
            for r in replicas
            if r != self.replica_id
        }
        self._pending = None  # the controller's word replaces whatever we proposed
        return self._set_isr(isr, partition_epoch)

    def _set_isr(self, isr: tuple[int, ...], partition_epoch: int) -> tuple[Effect, ...]:
        changed = isr != self.isr
        self.isr, self.partition_epoch = isr, partition_epoch
        effects = (IsrChanged(isr, partition_epoch),) if changed else ()
        return effects + self._maybe_advance_high_watermark()

    # -- leader: produce --------------------------------------------------------------------------
    def check_min_isr(self, acks: int) -> ErrorCode:
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if acks == ACKS_ALL and len(self.isr) < self.config.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    def append_as_leader(
        self, records, acks: int, now_ms: int, *, from_coordinator: bool = False
    ) -> AppendResult:
        """Append `records` (opaque to the core) in this leader epoch. Errors from the log
        (corrupt input) propagate; nothing was appended then. `from_coordinator`: transaction
        markers, which only the broker writes."""
        error = self.check_min_isr(acks)
        if error != ErrorCode.NONE:
            return AppendResult(
                error,
                f"broker {self.replica_id} is not the leader (leader: "
                f"{self.leader_id}); refresh metadata"
                if not self.is_leader
                else f"in-sync replicas {list(self.isr)} are fewer than min.insync."
                f"replicas={self.config.min_insync_replicas}; retry once "
                "followers catch up, or use acks=1",
            )
        info = self._log.append_as_leader(
            records, self.leader_epoch, now_ms, from_coordinator=from_coordinator
        )
        return AppendResult(
            first_offset=info.first_offset,
            last_offset=info.last_offset,
            leader_epoch=self.leader_epoch,
            effects=self._maybe_advance_high_watermark(),
        )

    def acks_satisfied(self, offset: int, leader_epoch: int) -> ErrorCode | None:
        """For an acks=all append ending at `offset` in `leader_epoch`: None while waiting,
        NONE once committed, or the error to answer with."""
        if not self.is_leader or leader_epoch != self.leader_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark <= offset:
            return None
        if len(self.isr) < self.config.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # -- leader: follower fetches -----------------------------------------------------------------
    def handle_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        now_ms: int,
        broker_epoch: int = -1,
    ) -> FetchDecision:
        if current_leader_epoch < self.leader_epoch:
            return self._refuse(
                ErrorCode.FENCED_LEADER_EPOCH,
                f"leader epoch {current_leader_epoch} is older than the current "
                f"{self.leader_epoch}; refresh metadata",
            )
        if current_leader_epoch > self.leader_epoch:
            return self._refuse(
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                f"broker {self.replica_id} has not yet seen leader epoch "
                f"{current_leader_epoch}; retry shortly",
            )
        if not self.is_leader:
            return self._refuse(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"broker {self.replica_id} is not the leader in epoch "
                f"{self.leader_epoch} (leader: {self.leader_id})",
            )
        state = self._followers.get(replica_id)
        if state is None:
            return self._refuse(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"replica {replica_id} is not assigned to this partition "
                f"(replicas {list(self.replicas)}); refresh metadata",
            )
        log = self._log
        if fetch_offset < log.log_start_offset or (
            last_fetched_epoch < 0 and fetch_offset > log.log_end_offset
        ):
            # With the leader's log start: a follower below it starts over from there.
            return FetchDecision(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"fetch offset {fetch_offset} is outside the leader's log "
                f"[{log.log_start_offset}, {log.log_end_offset}]",
                leader_epoch=self.leader_epoch,
                high_watermark=self.high_watermark,
                log_start_offset=log.log_start_offset,
            )
        diverging = self._diverging_epoch(fetch_offset, last_fetched_epoch)
        if diverging is not None:
            return FetchDecision(
                leader_epoch=self.leader_epoch,
                high_watermark=self.high_watermark,
                log_start_offset=log.log_start_offset,
                diverging_epoch=diverging,
            )
        effects = self._record_fetch(replica_id, state, fetch_offset, now_ms, broker_epoch)
        return FetchDecision(
            leader_epoch=self.leader_epoch,
            high_watermark=self.high_watermark,
            log_start_offset=log.log_start_offset,
            read_from=fetch_offset,
            effects=effects,
        )

    def _refuse(self, error: ErrorCode, message: str) -> FetchDecision:
        return FetchDecision(error, message, leader_epoch=self.leader_epoch)

    def _diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> EpochEndOffset | None:
        if last_fetched_epoch < 0:
            return None  # an empty follower log: nothing to compare
        epoch, end = self._log.end_offset_for_epoch(last_fetched_epoch)
        if epoch < last_fetched_epoch or end < fetch_offset:
            return EpochEndOffset(epoch, end)
        return None

    def _record_fetch(
        self,
        replica_id: int,
        state: ReplicaState,
        fetch_offset: int,
        now_ms: int,
        broker_epoch: int,
    ) -> tuple[Effect, ...]:
        leader_end = self._log.log_end_offset
        if fetch_offset >= leader_end:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_end_offset:
            # It has reached where we were at its previous fetch: caught up as of then.
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.last_fetch_leader_end_offset = leader_end
        state.last_fetch_ms = now_ms
        state.log_end_offset = fetch_offset
        state.broker_epoch = broker_epoch
        return self.maybe_expand_isr(replica_id, now_ms) + self._maybe_advance_high_watermark()

    # -- follower ---------------------------------------------------------------------------------
    def fetch_request(self) -> FollowerFetch | None:
        """What to fetch next from the leader, or None when not a follower."""
        if self.role != FOLLOWER or self.leader_id is None:
            return None
        return FollowerFetch(
            self.replica_id,
            self.leader_id,
            self.leader_epoch,
            self._log.log_end_offset,
            self._log.latest_epoch,
            self.broker_epoch,
        )

    def handle_fetch_response(
        self, request: FollowerFetch, answer: FetchAnswer, now_ms: int
    ) -> tuple[Effect, ...]:
        """Apply the leader's answer to `request`. An answer to anything but our current
        position with our current leader is stale and dropped (so a late diverging epoch can
        never cut newer data). Errors change nothing: back off, wait for metadata."""
        log = self._log
        if (
            self.role != FOLLOWER
            or request.leader_id != self.leader_id
            or request.current_leader_epoch != self.leader_epoch
            or request.fetch_offset != log.log_end_offset
            or request.last_fetched_epoch != log.latest_epoch
        ):
            return ()
        if (
            answer.error == ErrorCode.OFFSET_OUT_OF_RANGE
            and answer.log_start_offset > log.log_end_offset
        ):
            # Retention on the leader removed everything we would fetch next: no fetch can
            # ever succeed from here, so start over empty at the leader's log start (Kafka's
            # truncateFullyAndStartAt) and catch up from there into the ISR.
            offset = answer.log_start_offset
            log.truncate_fully_and_start_at(offset)
            self.high_watermark = offset
            return (Truncated(offset),)
        if answer.error != ErrorCode.NONE:
            return ()
        if answer.diverging_epoch is not None:
            return self._truncate(self._truncation_offset(EpochEndOffset(*answer.diverging_epoch)))
        if answer.records:
            log.append_as_follower(answer.records, now_ms=now_ms)
        hw = min(answer.high_watermark, log.log_end_offset)
        if hw <= self.high_watermark:
            return ()
        self.high_watermark = hw
        return (HighWatermarkAdvanced(hw),)

    def _truncation_offset(self, diverging: EpochEndOffset) -> int:
        log = self._log
        if diverging.epoch < 0 or diverging.end_offset < 0:
            # The leader knows no epoch at or below ours (Kafka's fallback): keep only what our
            # high watermark proves committed.
            offset = self.high_watermark
        else:
            local_epoch, local_end = log.end_offset_for_epoch(diverging.epoch)
            if local_epoch == diverging.epoch:
                offset = min(diverging.end_offset, local_end)
            elif local_epoch < 0:
                offset = diverging.end_offset
            else:
                # We never saw the leader's epoch: cut to our end of the largest epoch below it;
                # the next fetch compares again and may cut further.
                offset = local_end
        return max(log.log_start_offset, min(offset, log.log_end_offset))

    def _truncate(self, offset: int) -> tuple[Effect, ...]:
        self._log.truncate_to(offset)
        self.high_watermark = min(self.high_watermark, offset)
        return (Truncated(offset),)
