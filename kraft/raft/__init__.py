"""KRaft's metadata quorum as a pure core (RaftCore: step, tick, propose, ready, advance) with the
storage seams it needs (RaftLog, ElectionStore) and in-memory twins of them."""

from kraft.raft.config import RaftConfig
from kraft.raft.core import RaftCore
from kraft.raft.log import (
    ElectionState,
    ElectionStore,
    Entry,
    EpochEndOffset,
    OffsetAndEpoch,
    RaftLog,
)
from kraft.raft.memory import MemoryElectionStore, MemoryRaftLog
from kraft.raft.ready import LeaderAndEpoch, Ready

__all__ = [
    "RaftConfig",
    "RaftCore",
    "ElectionState",
    "ElectionStore",
    "Entry",
    "EpochEndOffset",
    "LeaderAndEpoch",
    "OffsetAndEpoch",
    "RaftLog",
    "MemoryElectionStore",
    "MemoryRaftLog",
    "Ready",
]
