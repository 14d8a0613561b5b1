"""Election RPC handlers mixed into RaftCore: Vote (real and pre-vote), BeginQuorumEpoch and
EndQuorumEpoch, plus how any reply from a newer epoch moves a node forward."""
from __future__ import annotations

from clients.errors import ErrorCode
from kraft.raft.leader_state import LeaderState
from kraft.raft.messages import (BeginQuorumEpochRequest, BeginQuorumEpochResponse,
                                 EndQuorumEpochRequest, EndQuorumEpochResponse, VoteRequest,
                                 VoteResponse)
from kraft.raft.quorum import log_is_up_to_date
from kraft.raft.state import (CandidateState, FollowerState, ProspectiveState, ResignedState,
                              UnattachedState, VotedState)

# Rules, in the order the handlers apply them:
# - A message from an older epoch is answered with FENCED_LEADER_EPOCH and our epoch and leader.
# - A real Vote or a BeginQuorumEpoch from a newer epoch moves us to that epoch first; a pre-vote
#   never does (that is its point), and a Fetch never does (the leader will tell us).
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
        return (isinstance(r, FollowerState) and r.election_deadline_ms is None
                and r.last_fetch_ok_ms is not None
                and self._now - r.last_fetch_ok_ms < self.config.fetch_timeout_ms)

    def handle_vote_request(self, m: VoteRequest) -> None:
        def reply(granted: bool, error: ErrorCode = ErrorCode.NONE) -> None:
            self._send(VoteResponse(self.node_id, m.src, self.epoch, self._known_leader(),
                                    granted, m.pre_vote, error))

        if self.is_observer or m.src not in self.voters:
            reply(False, ErrorCode.INCONSISTENT_VOTER_SET)
            return
        up_to_date = log_is_up_to_date(m.last_epoch, m.last_offset,
                                       self._log.last_fetched_epoch, self._log.log_end_offset)
        if m.pre_vote:
            reply(m.epoch > self.epoch and up_to_date and not self._has_live_leader())
            return
        if m.epoch < self.epoch:
            reply(False, ErrorCode.FENCED_LEADER_EPOCH)
            return
        if m.epoch > self.epoch:
            self._become_unattached(m.epoch)
        busy = isinstance(self._role, (LeaderState, CandidateState, ResignedState))
        granted = (up_to_date and not busy and self.leader_id is None
                   and self.voted_for in (None, m.src))
        if granted and self.voted_for is None:
            self._become_voted(m.src)
        reply(granted)

    def handle_vote_response(self, m: VoteResponse) -> None:
        if self._maybe_observe_epoch(m.epoch, m.leader_id):
            return
        r = self._role
        if m.epoch == self.epoch and m.leader_id not in (None, self.node_id) \
                and not m.vote_granted and isinstance(r, (ProspectiveState, CandidateState)):
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
        error = ErrorCode.NONE
        if m.epoch < self.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif m.epoch == self.epoch and isinstance(self._role, (LeaderState, ResignedState)):
            error = ErrorCode.INVALID_REQUEST  # two leaders in one epoch cannot happen
        elif not (isinstance(self._role, FollowerState) and self.leader_id == m.src
                  and m.epoch == self.epoch):
            self._become_follower(m.epoch, m.src)
        self._send(BeginQuorumEpochResponse(self.node_id, m.src, self.epoch,
                                            self._known_leader(), error))

    def handle_begin_quorum_epoch_response(self, m: BeginQuorumEpochResponse) -> None:
        self._maybe_observe_epoch(m.epoch, m.leader_id)

    def handle_end_quorum_epoch_request(self, m: EndQuorumEpochRequest) -> None:
        error = ErrorCode.NONE
        if m.epoch < self.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif not self.is_observer:
            if m.epoch > self.epoch:
                self._become_unattached(m.epoch)
            r = self._role
            if isinstance(r, FollowerState) and self.leader_id == m.src or \
                    isinstance(r, (UnattachedState, VotedState)):
                self._maybe_elect_soon(m.preferred_successors)
        self._send(EndQuorumEpochResponse(self.node_id, m.src, self.epoch,
                                          self._known_leader(), error))

    def _maybe_elect_soon(self, successors: tuple[int, ...]) -> None:
        """The leader left: the first preferred successor elects at once, the others a little
        later each, so the most caught-up voter usually wins the first round."""
        backoff = self.config.election_backoff_max_ms
        if self.node_id in successors:
            delay = successors.index(self.node_id) * backoff // len(successors)
        else:  # not ranked (or the leader just vanished): let the ranked voters go first
            delay = backoff // 2 + self._rng.randrange(max(1, backoff // 2))
        deadline = self._now + delay
        r = self._role
        if r.election_deadline_ms is None or deadline < r.election_deadline_ms:
            r.election_deadline_ms = deadline
        if isinstance(r, FollowerState):
            self._fetch_inflight = self._next_fetch_ms = None  # nobody left to fetch from

    def handle_end_quorum_epoch_response(self, m: EndQuorumEpochResponse) -> None:
        if self._maybe_observe_epoch(m.epoch, m.leader_id):
            return
        if isinstance(self._role, ResignedState) and m.error == ErrorCode.NONE:
            self._role.unacknowledged.discard(m.src)
