"""The leader's view of its replicas (Kafka's LeaderState): each voter's acknowledged log end
offset and last fetch time, observers, check-quorum bookkeeping and parked (long-poll) fetches."""

from __future__ import annotations

from dataclasses import dataclass

from kraft.raft.messages import FetchRequest
from kraft.raft.quorum import majority, majority_end_offset

# Observers are whoever fetches without being a voter (brokers), and the core cannot tell a real
# one from an invented id: past this many it forgets the one heard from least recently, so a
# stream of made-up ids costs bounded memory. They never count toward anything but DescribeQuorum.
MAX_OBSERVERS = 1000


@dataclass
class ReplicaState:
    # The fetch offset last acknowledged in this epoch (-1 until the first valid fetch).
    end_offset: int = -1
    last_fetch_ms: int | None = None


class LeaderState:
    name = "Leader"

    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        epoch_start_offset: int,
        now_ms: int,
        check_quorum_timeout_ms: int,
    ) -> None:
        self.node_id = node_id
        self.voters = voters
        # Offset of this epoch's LeaderChange entry: nothing commits until it does (Raft 5.4.2).
        self.epoch_start_offset = epoch_start_offset
        self.voter_states = {v: ReplicaState() for v in voters if v != node_id}
        self.observer_states: dict[int, ReplicaState] = {}
        self._check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms
        self._fetched_voters: set[int] = set()
        self.begin_quorum_resend_ms = now_ms
        self.parked: dict[int, tuple[FetchRequest, int]] = {}

    def replica(self, replica_id: int) -> ReplicaState:
        state = self.voter_states.get(replica_id)
        if state is None:
            state = self.observer_states.get(replica_id)
        if state is None:
            if len(self.observer_states) >= MAX_OBSERVERS:
                stalest = min(
                    self.observer_states, key=lambda o: self.observer_states[o].last_fetch_ms or 0
                )
                del self.observer_states[stalest]
            state = self.observer_states[replica_id] = ReplicaState()
        return state

    def record_contact(self, replica_id: int, now_ms: int) -> None:
        """Any fetch in this epoch proves the voter still follows us (check-quorum)."""
        self.replica(replica_id).last_fetch_ms = now_ms
        if replica_id not in self.voter_states:
            return
        self._fetched_voters.add(replica_id)
        if len(self._fetched_voters) + 1 >= majority(len(self.voters)):
            self.check_quorum_deadline_ms = now_ms + self._check_quorum_timeout_ms
            self._fetched_voters.clear()

    def check_quorum_expired(self, now_ms: int) -> bool:
        return len(self.voters) > 1 and now_ms >= self.check_quorum_deadline_ms

    def update_end_offset(self, replica_id: int, fetch_offset: int) -> None:
        self.replica(replica_id).end_offset = fetch_offset

    def high_watermark_candidate(self, own_flushed_offset: int) -> int | None:
        """The majority's durable offset, if it covers this epoch's first entry; observers never
        count, and the leader counts only what it has flushed itself."""
        offsets = [own_flushed_offset] + [s.end_offset for s in self.voter_states.values()]
        hw = majority_end_offset(offsets, len(self.voters))
        return hw if hw is not None and hw > self.epoch_start_offset else None

    def silent_voters(self) -> list[int]:
        return sorted(v for v, s in self.voter_states.items() if s.last_fetch_ms is None)

    def successors_by_end_offset(self) -> tuple[int, ...]:
        """Voters most caught up first: the one that can win fastest should try first."""
        return tuple(sorted(self.voter_states, key=lambda v: (-self.voter_states[v].end_offset, v)))
