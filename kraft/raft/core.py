"""RaftCore: KRaft's quorum as a pure synchronous state machine in etcd's shape (step, tick,
propose, ready, advance). No clock, network, disk or global random: all are passed in."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgpack

from clients.errors import ErrorCode
from clients.quorum_info import QuorumInfo, ReplicaInfo
from kraft.raft.config import RaftConfig
from kraft.raft.election import ElectionHandlers
from kraft.raft.leader_state import LeaderState
from kraft.raft.log import ElectionState, ElectionStore, Entry, OffsetAndEpoch, RaftLog
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.quorum import VoteTally
from kraft.raft.ready import LeaderAndEpoch, Ready, SnapshotInstall
from kraft.raft.replication import ReplicationHandlers
from kraft.raft.state import (
    CandidateState,
    FollowerState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from kraft.raft.validation import MAX_EPOCH

if TYPE_CHECKING:  # the core only ever uses the Random it is given, never the global one
    from random import Random


class RaftCore(ElectionHandlers, ReplicationHandlers):
    """One node of the quorum. Drive it with `step(message)`, `tick()` and `propose()`; after each,
    if `has_ready()`, take `ready()`, do what it says in order, then `advance(ready)`."""

    _HANDLERS = {
        VoteRequest: "handle_vote_request",
        VoteResponse: "handle_vote_response",
        BeginQuorumEpochRequest: "handle_begin_quorum_epoch_request",
        BeginQuorumEpochResponse: "handle_begin_quorum_epoch_response",
        EndQuorumEpochRequest: "handle_end_quorum_epoch_request",
        EndQuorumEpochResponse: "handle_end_quorum_epoch_response",
        FetchRequest: "handle_fetch_request",
        FetchResponse: "handle_fetch_response",
        FetchSnapshotRequest: "handle_fetch_snapshot_request",
        FetchSnapshotResponse: "handle_fetch_snapshot_response",
    }
    _REQUESTS = (
        VoteRequest,
        BeginQuorumEpochRequest,
        EndQuorumEpochRequest,
        FetchRequest,
        FetchSnapshotRequest,
    )

    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        log: RaftLog,
        election_store: ElectionStore,
        rng: Random,
        config: RaftConfig,
        now_ms: int,
        is_observer: bool = False,
    ) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.config = config
        self._log = log
        self._store = election_store
        self._rng = rng
        self._now = now_ms
        # Brokers observe; so does any node the voter set does not name (it may never vote).
        self.is_observer = is_observer or node_id not in self.voters
        stored = election_store.read() or ElectionState()
        self.epoch, self.voted_for, self.leader_id = (
            stored.epoch,
            stored.voted_for,
            stored.leader_id,
        )
        self._election_dirty = False
        if log.last_fetched_epoch > self.epoch:
            # quorum-state lags the log (written by an older process): trust the larger epoch.
            self.epoch, self.voted_for, self.leader_id = log.last_fetched_epoch, None, None
            self._election_dirty = True
        self.high_watermark = log.log_start_offset  # a snapshot only ever holds committed data
        self._applied = log.log_start_offset
        self._snapshot_to_load = log.latest_snapshot_id
        # A snapshot fetched whole, for the next Ready to install; then True until advance().
        self._snapshot_to_install: SnapshotInstall | None = None
        self._installing = False
        self._outbox: list[Message] = []
        self._ready_pending = False
        self._request_id = 0
        self._fetch_inflight: tuple[int, int, int] | None = None  # (request id, dst, deadline)
        self._next_fetch_ms: int | None = None
        self._role = self._initial_role()
        self._maybe_elect_alone()

    def _initial_role(self):
        if self.leader_id == self.node_id and not self.is_observer:
            # A restarted leader never resumes its epoch: its in-memory state is gone.
            return ResignedState(self._random_election_deadline(), (), set(), self._now)
        if self.leader_id is not None and self.leader_id != self.node_id:
            self._next_fetch_ms = self._now
            return FollowerState(self._now + self.config.fetch_timeout_ms)
        if self.voted_for is not None and not self.is_observer:
            return VotedState(self._random_election_deadline())
        return self._unattached_role()

    def _maybe_elect_alone(self) -> None:
        """A sole voter needs nobody's vote: it elects itself at once instead of waiting out an
        election timeout (Kafka does the same), whatever it was before the restart."""
        if (
            not self.is_observer
            and self.voters == {self.node_id}
            and not self.is_leader
            and self._can_stand()
        ):
            self._become_candidate()

    # -- public API -------------------------------------------------------------------------------
    @property
    def role(self) -> str:
        return self._role.name

    @property
    def is_leader(self) -> bool:
        return isinstance(self._role, LeaderState)

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        """The leader this node would send clients to (None while unknown) and its epoch."""
        return LeaderAndEpoch(self._known_leader(), self.epoch)

    @property
    def leader_epoch_start_offset(self) -> int | None:
        """As leader, the offset of this epoch's LeaderChange entry: every entry below it is
        from an older epoch, so a state machine that has applied up to it has seen all of them
        (Kafka's active controller waits for that before it serves). None when not leader."""
        return self._role.epoch_start_offset if self.is_leader else None

    def step(self, message: Message, now_ms: int) -> None:
        self._now = max(self._now, now_ms)
        if message.dst != self.node_id or message.src == self.node_id:
            return
        if message.epoch >= MAX_EPOCH and not isinstance(message, self._REQUESTS):
            return  # an answer no node could have sent (see validation.py): as good as lost
        getattr(self, self._HANDLERS[type(message)])(message)
        self._maybe_send_fetch()

    def tick(self, now_ms: int) -> None:
        self._now = max(self._now, now_ms)
        self._on_timers()
        self._maybe_send_fetch()

    def propose(self, payloads: list[bytes], now_ms: int) -> OffsetAndEpoch | ErrorCode:
        """Append as leader; returns the last entry's (offset, epoch): it is committed once the
        high watermark passes the offset with that epoch still there. Not leader: an error code."""
        self._now = max(self._now, now_ms)
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if not payloads:
            return OffsetAndEpoch(self._log.log_end_offset - 1, self.epoch)
        start = self._log.log_end_offset
        self._log.append([Entry(start + i, self.epoch, bytes(p)) for i, p in enumerate(payloads)])
        self._wake_parked_fetches()
        return OffsetAndEpoch(start + len(payloads) - 1, self.epoch)

    def resign(self, now_ms: int) -> None:
        """Graceful shutdown of a leader: tell voters to elect now (EndQuorumEpoch)."""
        self._now = max(self._now, now_ms)
        if self.is_leader:
            self._become_resigned(self._role.successors_by_end_offset())

    def has_ready(self) -> bool:
        if self._ready_pending:
            return False
        return bool(
            self._outbox
            or self._election_dirty
            or self._snapshot_to_load
            or self._snapshot_to_install
            or self._applied < self._commit_end()
            or self._must_flush()
        )

    def ready(self) -> Ready:
        if self._ready_pending:
            raise RuntimeError("ready() called again before advance()")
        self._ready_pending = True
        load, self._snapshot_to_load = self._snapshot_to_load, None
        install, self._snapshot_to_install = self._snapshot_to_install, None
        if load is not None:
            self._applied = max(self._applied, load.offset)
        committed, snapshot_to_take = (), None
        if install is None:
            start = max(self._applied, self._log.log_start_offset)
            committed = (
                tuple(self._log.read(start, self._commit_end() - start))
                if start < self._commit_end()
                else ()
            )
            self._applied = max(self._applied, self._commit_end())
            snapshot_to_take = self._snapshot_due()
        else:
            # The log is replaced by `install` only when the driver persists this Ready: nothing
            # of the old log may be applied or snapshotted meanwhile.
            self._installing = True
        ready = Ready(
            snapshot_to_install=install,
            election_state=self._election_state() if self._election_dirty else None,
            must_flush=self._must_flush(),
            messages=tuple(self._outbox),
            snapshot_to_load=load,
            committed=committed,
            snapshot_to_take=snapshot_to_take,
            role=self.role,
            epoch=self.epoch,
            leader_id=self._known_leader(),
            high_watermark=self.high_watermark,
            next_deadline_ms=self.next_deadline_ms,
        )
        self._outbox = []
        self._election_dirty = False
        return ready

    def advance(self, ready: Ready) -> None:
        """The driver did everything `ready` asked. A leader's flush may now commit more."""
        self._ready_pending = False
        if ready.snapshot_to_install is not None:
            self._installing = False
            self._maybe_send_fetch()  # on from the installed snapshot's end
        if self.is_leader:
            self._maybe_advance_high_watermark()

    @property
    def next_deadline_ms(self) -> int | None:
        r = self._role
        times = [self._fetch_inflight[2] if self._fetch_inflight else self._next_fetch_ms]
        if isinstance(r, LeaderState):
            times += [
                r.check_quorum_deadline_ms if len(self.voters) > 1 else None,
                r.begin_quorum_resend_ms if r.silent_voters() else None,
            ]
            times += [expiry for _, expiry in r.parked.values()]
        elif isinstance(r, FollowerState):
            times += [r.fetch_deadline_ms, r.election_deadline_ms]
        elif isinstance(r, ResignedState):
            times += [r.election_deadline_ms, r.resend_ms if r.unacknowledged else None]
        else:
            times.append(r.election_deadline_ms)
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def describe(self) -> QuorumInfo:
        r = self._role
        voters: tuple[ReplicaInfo, ...] = ()
        observers: tuple[ReplicaInfo, ...] = ()
        if isinstance(r, LeaderState):
            voters = (ReplicaInfo(self.node_id, self._log.log_end_offset, self._now),) + tuple(
                ReplicaInfo(v, s.end_offset, s.last_fetch_ms)
                for v, s in sorted(r.voter_states.items())
            )
            observers = tuple(
                ReplicaInfo(o, s.end_offset, s.last_fetch_ms)
                for o, s in sorted(r.observer_states.items())
            )
        return QuorumInfo(
            self.node_id,
            self.role,
            self._known_leader(),
            self.epoch,
            self.high_watermark,
            self._log.log_end_offset,
            voters,
            observers,
        )

    # -- transitions ------------------------------------------------------------------------------
    def _set_election(self, epoch: int, voted_for: int | None, leader_id: int | None) -> None:
        if (epoch, voted_for, leader_id) != (self.epoch, self.voted_for, self.leader_id):
            if epoch < self.epoch:
                raise RuntimeError(f"epoch would go back from {self.epoch} to {epoch}")
            self.epoch, self.voted_for, self.leader_id = epoch, voted_for, leader_id
            self._election_dirty = True

    def _transition(self, role) -> None:
        if isinstance(self._role, LeaderState):
            self._reject_parked_fetches()
        self._role = role
        self._fetch_inflight = None
        self._next_fetch_ms = None

    def _unattached_role(self) -> UnattachedState:
        if self.is_observer:
            self._next_fetch_ms = self._now
            return UnattachedState(None)
        return UnattachedState(self._random_election_deadline())

    def _become_unattached(self, epoch: int) -> None:
        self._set_election(epoch, None, None)
        self._transition(None)
        self._role = self._unattached_role()

    def _become_voted(self, candidate_id: int) -> None:
        self._set_election(self.epoch, candidate_id, None)
        self._transition(VotedState(self._random_election_deadline()))

    def _become_follower(self, epoch: int, leader_id: int) -> None:
        self._set_election(epoch, self.voted_for if epoch == self.epoch else None, leader_id)
        self._transition(FollowerState(self._now + self.config.fetch_timeout_ms))
        self._next_fetch_ms = self._now

    def _can_stand(self) -> bool:
        """Whether the next epoch still fits in int32. Only forged requests could bring a quorum
        this far (validation.py, RaftConfig.max_epoch_jump); there it stays, never crashes."""
        return self.epoch + 1 < MAX_EPOCH

    def _become_prospective(self) -> None:
        if self.is_observer or self.node_id not in self.voters:
            return
        if not self._can_stand():
            self._set_election(self.epoch, self.voted_for, None)
            deadline = self._random_election_deadline()
            self._transition(
                VotedState(deadline) if self.voted_for is not None else UnattachedState(deadline)
            )
            return
        tally = VoteTally(self.voters, self.node_id)
        self._transition(ProspectiveState(self._random_election_deadline(), tally))
        if tally.won:
            self._become_candidate()
            return
        self._send_vote_requests(self.epoch + 1, pre_vote=True)

    def _become_candidate(self) -> None:
        self._set_election(self.epoch + 1, self.node_id, None)
        tally = VoteTally(self.voters, self.node_id)
        self._transition(CandidateState(self._random_election_deadline(), tally))
        if tally.won:
            self._become_leader()
            return
        self._send_vote_requests(self.epoch, pre_vote=False)

    def _become_leader(self) -> None:
        if not self._role.tally.won:
            raise RuntimeError("become_leader without a majority")
        self._set_election(self.epoch, self.voted_for, self.node_id)
        start = self._log.log_end_offset
        self._transition(
            LeaderState(
                self.node_id, self.voters, start, self._now, self.config.check_quorum_timeout_ms
            )
        )
        change = msgpack.packb(
            {
                "type": "LeaderChange",
                "version": 0,
                "leader_id": self.node_id,
                "leader_epoch": self.epoch,
                "voters": sorted(self.voters),
            }
        )
        self._log.append([Entry(start, self.epoch, change, control=True)])
        self._send_begin_quorum_epoch(self._role.silent_voters())

    def _become_resigned(self, successors: tuple[int, ...]) -> None:
        others = {v for v in self.voters if v != self.node_id}
        self._transition(
            ResignedState(
                self._random_election_deadline(),
                successors,
                others,
                self._now + self.config.request_timeout_ms,
            )
        )
        for v in sorted(others):
            self._send(EndQuorumEpochRequest(self.node_id, v, self.epoch, successors))

    # -- timers -----------------------------------------------------------------------------------
    def _on_timers(self) -> None:
        r, now = self._role, self._now
        if isinstance(r, LeaderState):
            if r.check_quorum_expired(now):
                self._become_resigned(r.successors_by_end_offset())
                return
            self._expire_parked_fetches()
            if now >= r.begin_quorum_resend_ms and r.silent_voters():
                self._send_begin_quorum_epoch(r.silent_voters())
        elif isinstance(r, ResignedState):
            if now >= r.election_deadline_ms:
                self._become_prospective()
            elif now >= r.resend_ms and r.unacknowledged:
                r.resend_ms = now + self.config.request_timeout_ms
                for v in sorted(r.unacknowledged):
                    self._send(
                        EndQuorumEpochRequest(self.node_id, v, self.epoch, r.preferred_successors)
                    )
        elif isinstance(r, FollowerState):
            expired = now >= r.fetch_deadline_ms or (
                r.election_deadline_ms is not None and now >= r.election_deadline_ms
            )
            if expired and self.is_observer:
                self._become_unattached_same_epoch()
            elif expired:
                self._become_prospective()
        elif r.election_deadline_ms is not None and now >= r.election_deadline_ms:
            self._become_prospective()

    def _become_unattached_same_epoch(self) -> None:
        """An observer that lost its leader forgets it and asks the voters again."""
        self._set_election(self.epoch, None, None)
        self._transition(None)
        self._role = self._unattached_role()

    # -- helpers ----------------------------------------------------------------------------------
    def _random_election_deadline(self) -> int:
        t = self.config.election_timeout_ms
        return self._now + t + self._rng.randrange(t)

    def _next_request_id(self) -> int:
        self._request_id += 1
        return self._request_id

    def _send(self, message: Message) -> None:
        self._outbox.append(message)

    def _send_vote_requests(self, epoch: int, pre_vote: bool) -> None:
        for v in sorted(self.voters):
            if v != self.node_id:
                self._send(
                    VoteRequest(
                        self.node_id,
                        v,
                        epoch,
                        self._log.last_fetched_epoch,
                        self._log.log_end_offset,
                        pre_vote,
                    )
                )

    def _send_begin_quorum_epoch(self, voters: list[int]) -> None:
        self._role.begin_quorum_resend_ms = self._now + self.config.request_timeout_ms
        for v in voters:
            self._send(BeginQuorumEpochRequest(self.node_id, v, self.epoch))

    def _known_leader(self) -> int | None:
        # A leader that resigned (or restarted) must not point fetchers back at itself.
        if self.leader_id == self.node_id and not self.is_leader:
            return None
        if isinstance(self._role, FollowerState) and self._role.election_deadline_ms is not None:
            return None  # it told us it resigned
        return self.leader_id

    def _election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.voted_for, self.leader_id)

    def _commit_end(self) -> int:
        return min(self.high_watermark, self._log.log_end_offset)

    def _must_flush(self) -> bool:
        # Voters fsync before voting or fetching on: a fetch offset is an acknowledgement.
        return not self.is_observer and self._log.flushed_offset < self._log.log_end_offset

    def _snapshot_due(self) -> OffsetAndEpoch | None:
        interval = self.config.snapshot_interval_entries
        latest = self._log.latest_snapshot_id
        base = latest.offset if latest else 0
        if not interval or self._applied - base < interval:
            return None
        return OffsetAndEpoch(self._applied, self._log.epoch_at(self._applied - 1))
