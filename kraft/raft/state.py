"""One small class per role a node can be in (Kafka's UnattachedState, ProspectiveState, ...).
They hold only volatile data; epoch, voted_for and leader_id live on the core and are persisted."""

from __future__ import annotations

from dataclasses import dataclass, field

from kraft.raft.log import OffsetAndEpoch
from kraft.raft.quorum import VoteTally


@dataclass
class UnattachedState:
    """No leader and no vote in this epoch. A voter elects when the deadline passes; an observer
    (deadline None) asks random voters who leads instead."""

    name = "Unattached"
    election_deadline_ms: int | None


@dataclass
class VotedState:
    name = "Voted"
    election_deadline_ms: int


@dataclass
class ProspectiveState:
    """Pre-vote (KIP-996): ask whether a vote could be won before bumping anyone's epoch, so a
    node that was cut off cannot depose a healthy leader when it comes back."""

    name = "Prospective"
    election_deadline_ms: int
    tally: VoteTally


@dataclass
class CandidateState:
    name = "Candidate"
    election_deadline_ms: int
    tally: VoteTally


@dataclass
class SnapshotFetch:
    snapshot_id: OffsetAndEpoch
    data: bytearray = field(default_factory=bytearray)


@dataclass
class FollowerState:
    """Pulls from the leader. `last_fetch_ok_ms` feeds the fetch timeout and the pre-vote check;
    `election_deadline_ms` is set once the leader has said it resigned (EndQuorumEpoch)."""

    name = "Follower"
    fetch_deadline_ms: int
    last_fetch_ok_ms: int | None = None  # only a fetch answered proves the leader alive
    election_deadline_ms: int | None = None
    snapshot: SnapshotFetch | None = None


@dataclass
class ResignedState:
    """A leader that stepped down keeps its epoch (it may not lead it again) until someone elects."""

    name = "Resigned"
    election_deadline_ms: int
    preferred_successors: tuple[int, ...]
    unacknowledged: set[int]
    resend_ms: int
