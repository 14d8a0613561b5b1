"""Election RPC handlers mixed into RaftCore: Vote (real and pre-vote), BeginQuorumEpoch and
EndQuorumEpoch, plus how any reply from a newer epoch moves a node forward."""

from __future__ import annotations

from clients.errors import ErrorCode
from kraft.raft.leader_state import LeaderState
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.quorum import log_is_up_to_date
from kraft.raft.state import (
    CandidateState,
    FollowerState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from kraft.raft.validation import MAX_EPOCH

# Rules, in the order the handlers apply them:
# - Vote, BeginQuorumEpoch and EndQuorumEpoch come only from voters, and only voters take them:
#   anything else is INCONSISTENT_VOTER_SET and changes nothing.
# - A message from an older epoch is answered with FENCED_LEADER_EPOCH and our epoch and leader.
# - A real Vote or a BeginQuorumEpoch from a newer epoch moves us to that epoch first, unless it
#   is more than max_epoch_jump ahead or would leave no epoch to elect in (INVALID_REQUEST); a
#   BeginQuorumEpoch also waits while our own leader is alive (as a pre-vote does). A pre-vote
#   never moves us (that is its point), nor do a Fetch or an EndQuorumEpoch (UNKNOWN_LEADER_EPOCH:
#   our own requests' answers will tell us). Refusing is always Raft-safe: it is a lost message.
# - A vote is granted once per epoch, only to a voter whose log is at least as up to date, and
#   never while we know this epoch's leader. A pre-vote is granted to a newer epoch with an
#   up-to-date log unless we lead or have heard from our leader within the fetch timeout.
# - Any reply that names a newer epoch makes us follow its leader, or wait unattached in it.


class ElectionHandlers:
    def _maybe_observe_epoch(self, epoch: int, leader_id: int | None) -> bool:
        """True if `epoch` is newer than ours and we moved to it."""
        if epoch <= self.epoch:
            return False
        if leader_id is not None and leader_id != self.node_id:
            self._become_follower(epoch, leader_id)
        else:
            self._become_unattached(epoch)
        return True

    def _has_live_leader(self) -> bool:
        r = self._role
        if isinstance(r, LeaderState):
            return True
        return (
            isinstance(r, FollowerState)
            and r.election_deadline_ms is None
            and r.last_fetch_ok_ms is not None
            and self._now - r.last_fetch_ok_ms < self.config.fetch_timeout_ms
        )

    def _voter_refusal(self, sender: int) -> str | None:
        """Why a Vote, BeginQuorumEpoch or EndQuorumEpoch from `sender` is refused, or None."""
        if self.is_observer:
            return f"node {self.node_id} is an observer: it takes no part in elections"
        if sender not in self.voters:
            return (
                f"node {sender} is not a voter (voters: {', '.join(map(str, sorted(self.voters)))})"
            )
        return None

    def _newer_epoch_refusal(self, epoch: int) -> str | None:
        """Why a request may not move us to `epoch` (newer than ours), or None."""
        if epoch >= MAX_EPOCH:
            return f"epoch {epoch} leaves no epoch to elect in after it (epochs are int32)"
        if epoch - self.epoch > self.config.max_epoch_jump:
            return (
                f"epoch {epoch} is more than {self.config.max_epoch_jump} ahead of this "
                f"node's epoch {self.epoch}"
            )
        return None

    def handle_vote_request(self, m: VoteRequest) -> None:
        def reply(granted: bool, error: ErrorCode = ErrorCode.NONE, why: str = "") -> None:
            self._send(
                VoteResponse(
                    self.node_id,
                    m.src,
                    self.epoch,
                    self._known_leader(),
                    granted,
                    m.pre_vote,
                    error,
                    why,
                )
            )

        refused = self._voter_refusal(m.src)
        if refused:
            reply(False, ErrorCode.INCONSISTENT_VOTER_SET, refused)
            return
        up_to_date = log_is_up_to_date(
            m.last_epoch, m.last_offset, self._log.last_fetched_epoch, self._log.log_end_offset
        )
        if m.pre_vote:
            reply(m.epoch > self.epoch and up_to_date and not self._has_live_leader())
            return
        if m.epoch < self.epoch:
            reply(False, ErrorCode.FENCED_LEADER_EPOCH)
            return
        if m.epoch > self.epoch:
            refused = self._newer_epoch_refusal(m.epoch)
            if refused:
                reply(False, ErrorCode.INVALID_REQUEST, refused)
                return
            self._become_unattached(m.epoch)
        busy = isinstance(self._role, (LeaderState, CandidateState, ResignedState))
        granted = (
            up_to_date and not busy and self.leader_id is None and self.voted_for in (None, m.src)
        )
        if granted and self.voted_for is None:
            self._become_voted(m.src)
        reply(granted)

    def handle_vote_response(self, m: VoteResponse) -> None:
        if self._maybe_observe_epoch(m.epoch, m.leader_id):
            return
        r = self._role
        if (
            m.epoch == self.epoch
            and m.leader_id not in (None, self.node_id)
            and not m.vote_granted
            and isinstance(r, (ProspectiveState, CandidateState))
        ):
            # Someone still follows a leader of our epoch: try following it again (KIP-996). Only
            # an answered fetch makes it count as alive, so this cannot pin a dead leader.
            self._become_follower(self.epoch, m.leader_id)
            return
        if isinstance(r, ProspectiveState) and m.pre_vote:
            r.tally.record(m.src, m.vote_granted)
            if r.tally.won:
                self._become_candidate()
        elif isinstance(r, CandidateState) and not m.pre_vote and m.epoch == self.epoch:
            r.tally.record(m.src, m.vote_granted)
            if r.tally.won:
                self._become_leader()

    def handle_begin_quorum_epoch_request(self, m: BeginQuorumEpochRequest) -> None:
        error, why = ErrorCode.NONE, self._voter_refusal(m.src)
        if why:
            error = ErrorCode.INCONSISTENT_VOTER_SET
        elif m.epoch < self.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif m.epoch == self.epoch and isinstance(self._role, (LeaderState, ResignedState)):
            error = ErrorCode.INVALID_REQUEST  # two leaders in one epoch cannot happen
            why = f"node {self.node_id} led epoch {self.epoch} itself"
        elif m.epoch == self.epoch and self.leader_id not in (None, m.src):
            error, why = (
                ErrorCode.INVALID_REQUEST,
                f"epoch {self.epoch} already has leader {self.leader_id}",
            )
        elif m.epoch > self.epoch and (too_far := self._newer_epoch_refusal(m.epoch)):
            error, why = ErrorCode.INVALID_REQUEST, too_far
        elif m.epoch > self.epoch and self._has_live_leader():
            # Our leader answered within the fetch timeout. A real new leader's election needed a
            # majority that lost it, so ours soon resigns (check-quorum) or fences our fetch, and
            # the new leader resends; a forged announcement cannot take a healthy quorum apart.
            error, why = (
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                f"node {self.node_id} still follows leader {self._known_leader()} of epoch "
                f"{self.epoch}",
            )
        elif not (
            isinstance(self._role, FollowerState)
            and self.leader_id == m.src
            and m.epoch == self.epoch
        ):
            self._become_follower(m.epoch, m.src)
        self._send(
            BeginQuorumEpochResponse(
                self.node_id, m.src, self.epoch, self._known_leader(), error, why or ""
            )
        )

    def handle_begin_quorum_epoch_response(self, m: BeginQuorumEpochResponse) -> None:
        self._maybe_observe_epoch(m.epoch, m.leader_id)

    def handle_end_quorum_epoch_request(self, m: EndQuorumEpochRequest) -> None:
        error, why = ErrorCode.NONE, self._voter_refusal(m.src)
        strangers = sorted(set(m.preferred_successors) - self.voters)
        if why:
            error = ErrorCode.INCONSISTENT_VOTER_SET
        elif strangers:
            error, why = (
                ErrorCode.INVALID_REQUEST,
                f"preferred_successors names non-voters {', '.join(map(str, strangers))}",
            )
        elif m.epoch < self.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif m.epoch > self.epoch:
            # Only the leader of an epoch can end it, and we never heard of this one: whoever
            # leads it will reach us, and our own timers elect if nobody does.
            error, why = (
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                f"epoch {m.epoch} is newer than node {self.node_id}'s epoch {self.epoch}",
            )
        else:
            r = self._role
            if (
                isinstance(r, FollowerState)
                and self.leader_id == m.src
                or isinstance(r, (UnattachedState, VotedState))
            ):
                self._maybe_elect_soon(m.preferred_successors)
        self._send(
            EndQuorumEpochResponse(
                self.node_id, m.src, self.epoch, self._known_leader(), error, why or ""
            )
        )

    def _maybe_elect_soon(self, successors: tuple[int, ...], min_delay_ms: int = 0) -> None:
        """The leader left: the first preferred successor elects at once, the others a little
        later each, so the most caught-up voter usually wins the first round."""
        backoff = self.config.election_backoff_max_ms
        if self.node_id in successors:
            delay = min_delay_ms + successors.index(self.node_id) * backoff // len(successors)
        else:  # not ranked (or the leader just vanished): let the ranked voters go first
            delay = backoff // 2 + self._rng.randrange(max(1, backoff // 2))
        deadline = self._now + delay
        r = self._role
        if r.election_deadline_ms is None or deadline < r.election_deadline_ms:
            r.election_deadline_ms = deadline
        if isinstance(r, FollowerState):
            self._fetch_inflight = self._next_fetch_ms = None  # nobody left to fetch from

    def _on_leader_unreachable(self) -> None:
        """Our Fetch could not reach the leader: the connection was refused or reset, so its
        process is gone (a pause or a slow network times out instead, and waits for the fetch
        timeout), or our channel to it still backs off after an earlier failure (then the
        others still reach it and refuse our pre-vote). Elect soon, the other voters ranked by
        id so that one usually stands alone and no vote splits, the first after
        retry.backoff.ms (if the leader lives after all, a refused pre-vote sends us back to
        it, and we must not spin). No epoch moves unless a majority agrees: a voter grants the
        pre-vote only once its own fetches fail too."""
        successors = tuple(sorted(v for v in self.voters if v != self.leader_id))
        self._maybe_elect_soon(successors, min_delay_ms=self.config.retry_backoff_ms)

    def handle_end_quorum_epoch_response(self, m: EndQuorumEpochResponse) -> None:
        if self._maybe_observe_epoch(m.epoch, m.leader_id):
            return
        if isinstance(self._role, ResignedState) and m.error == ErrorCode.NONE:
            self._role.unacknowledged.discard(m.src)
