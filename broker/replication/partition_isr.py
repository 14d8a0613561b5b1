"""PartitionState's ISR as leader (a mixin, pure as the rest): expand and shrink proposals to the
controller one at a time, their answers, and the high watermark over the maximal ISR."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.replication.messages import Effect, HighWatermarkAdvanced, ProposeIsr
from clients.errors import ErrorCode

if TYPE_CHECKING:
    from broker.replication.partition_state import ReplicaState


@dataclass
class PendingIsr:
    proposal: ProposeIsr
    sent_ms: int
    # Refused in a way only newer metadata resolves: stop resending, keep counting it.
    awaiting_metadata: bool = False


# Refusals after which an earlier copy (or a retry) may still have been applied, or the partition
# has moved on: keep the maximal ISR until metadata tells the truth.
WAIT_FOR_METADATA = frozenset(
    ErrorCode[n]
    for n in (
        "FENCED_LEADER_EPOCH",
        "INVALID_UPDATE_VERSION",
        "STALE_BROKER_EPOCH",
        "NOT_LEADER_OR_FOLLOWER",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "UNKNOWN_TOPIC_ID",
        "INVALID_REQUEST",
    )
)


class PartitionIsr:
    """PartitionState's ISR changes; the attributes are PartitionState's (partition_state.py)."""

    def maybe_expand_isr(self, replica_id: int, now_ms: int) -> tuple[Effect, ...]:
        state = self._followers.get(replica_id)
        if (
            not self.is_leader
            or state is None
            or replica_id in self.isr
            or self._pending is not None
            or now_ms < self._propose_after_ms
        ):
            return ()
        if state.log_end_offset < max(self.high_watermark, self.leader_epoch_start_offset):
            return ()
        added = set(self.isr) | {replica_id}
        return (self._propose(tuple(r for r in self.replicas if r in added), now_ms),)

    def maybe_shrink_isr(self, now_ms: int) -> tuple[Effect, ...]:
        if not self.is_leader or self._pending is not None or now_ms < self._propose_after_ms:
            return ()
        leader_end = self._log.log_end_offset
        lagging = {
            r
            for r in self.isr
            if r != self.replica_id
            and not self._caught_up(self._followers.get(r), leader_end, now_ms)
        }
        if not lagging:
            return ()
        return (self._propose(tuple(r for r in self.isr if r not in lagging), now_ms),)

    def _caught_up(self, state: ReplicaState | None, leader_end: int, now_ms: int) -> bool:
        if state is None:
            return False
        return (
            state.log_end_offset == leader_end
            or now_ms - state.last_caught_up_ms <= self.config.replica_lag_time_max_ms
        )

    def tick(self, now_ms: int) -> tuple[Effect, ...]:
        """Periodic work: shrink the ISR, resend an AlterPartition left unanswered."""
        pending = self._pending
        if (
            self.is_leader
            and pending is not None
            and not pending.awaiting_metadata
            and now_ms - pending.sent_ms >= self.config.alter_partition_timeout_ms
        ):
            pending.sent_ms = now_ms
            return (pending.proposal,)
        return self.maybe_shrink_isr(now_ms)

    def _propose(self, new_isr: tuple[int, ...], now_ms: int) -> ProposeIsr:
        epochs = tuple(
            self.broker_epoch
            if r == self.replica_id
            else getattr(self._followers.get(r), "broker_epoch", -1)
            for r in new_isr
        )
        proposal = ProposeIsr(self.leader_epoch, self.partition_epoch, new_isr, epochs)
        self._pending = PendingIsr(proposal, now_ms)
        return proposal

    def on_alter_partition_result(
        self,
        proposal: ProposeIsr,
        error: ErrorCode,
        leader_epoch: int,
        partition_epoch: int,
        isr: tuple[int, ...],
        now_ms: int,
    ) -> tuple[Effect, ...]:
        """The controller's answer to `proposal`; answers to anything but the pending proposal
        change nothing. A success newer than what we know becomes the committed ISR.
        INELIGIBLE_REPLICA says the partition epoch is current and nothing was applied: back to
        the committed ISR, propose again after a backoff. After the other refusals an earlier
        copy may have been applied, so (as Kafka does) the maximal ISR stays until metadata with
        a newer partition epoch arrives. Other errors are transient: resend after the timeout."""
        pending = self._pending
        if not self.is_leader or pending is None or pending.proposal != proposal:
            return ()
        if error == ErrorCode.INELIGIBLE_REPLICA:
            self._pending = None
            self._propose_after_ms = now_ms + self.config.alter_partition_backoff_ms
            return ()
        if error in WAIT_FOR_METADATA:
            pending.awaiting_metadata = True
            return ()
        if (
            error != ErrorCode.NONE
            or leader_epoch != self.leader_epoch
            or partition_epoch <= self.partition_epoch
        ):
            return ()
        self._pending = None
        return self._set_isr(tuple(isr), partition_epoch)

    def _maybe_advance_high_watermark(self) -> tuple[Effect, ...]:
        if not self.is_leader:
            return ()
        candidate = self._log.log_end_offset
        for r in self.maximal_isr:
            if r != self.replica_id:
                state = self._followers.get(r)
                candidate = min(candidate, state.log_end_offset if state else -1)
        if candidate <= self.high_watermark:
            return ()
        self.high_watermark = candidate
        return (HighWatermarkAdvanced(candidate),)
