"""Scenario-test helpers: replicas made of a PartitionState over a MemoryReplicaLog, and one
follower fetch carried from follower to leader and back with no network in between."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.replication import (
    FetchAnswer,
    FetchDecision,
    MemoryReplicaLog,
    PartitionState,
    ReplicationConfig,
)

CONFIG = ReplicationConfig(
    replica_lag_time_max_ms=1000,
    min_insync_replicas=2,
    alter_partition_timeout_ms=500,
    alter_partition_backoff_ms=50,
)


@dataclass
class Replica:
    replica_id: int
    config: ReplicationConfig = CONFIG
    broker_epoch: int = 1
    log: MemoryReplicaLog = field(default_factory=MemoryReplicaLog)
    state: PartitionState = None

    def __post_init__(self) -> None:
        if self.state is None:
            self.state = PartitionState(self.replica_id, self.log, self.config, self.broker_epoch)

    def payloads(self) -> list[bytes]:
        return [r.payload for r in self.log.records()]


def fetch_once(
    follower: Replica, leader: Replica, now_ms: int, max_records: int = 100
) -> tuple[FetchDecision, tuple]:
    """One fetch round trip; returns the leader's decision and the follower's effects."""
    request = follower.state.fetch_request()
    assert request is not None and request.leader_id == leader.replica_id
    decision = leader.state.handle_follower_fetch(
        request.replica_id,
        request.fetch_offset,
        request.last_fetched_epoch,
        request.current_leader_epoch,
        now_ms,
        broker_epoch=request.broker_epoch,
    )
    records = (
        leader.log.read(decision.read_from, max_records) if decision.read_from is not None else ()
    )
    effects = follower.state.handle_fetch_response(
        request, FetchAnswer.of(decision, records), now_ms
    )
    return decision, effects


def fetch_until_quiet(followers, leader: Replica, now_ms: int, rounds: int = 10) -> None:
    """Fetch round-robin until nothing moves (followers caught up, HW propagated)."""
    for _ in range(rounds):
        for f in followers:
            fetch_once(f, leader, now_ms)
