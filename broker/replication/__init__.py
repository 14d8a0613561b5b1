"""Partition replication as a pure core (PartitionState: ISR, high watermark, KIP-101 follower
truncation), its narrow log seam with an in-memory twin, and the values they exchange."""

from broker.replication.memory_log import AppendedRange, MemoryReplicaLog, Record, ReplicaLog
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
    ProposeIsr,
    Truncated,
)
from broker.replication.partition_state import (
    FOLLOWER,
    LEADER,
    NONE,
    PartitionState,
    ReplicationConfig,
)

__all__ = [
    "ACKS_ALL",
    "AppendResult",
    "AppendedRange",
    "Effect",
    "EpochEndOffset",
    "FOLLOWER",
    "FetchAnswer",
    "FetchDecision",
    "FollowerFetch",
    "HighWatermarkAdvanced",
    "IsrChanged",
    "LEADER",
    "MemoryReplicaLog",
    "NONE",
    "PartitionState",
    "ProposeIsr",
    "Record",
    "ReplicaLog",
    "ReplicationConfig",
    "Truncated",
]
