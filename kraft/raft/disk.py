"""Raft's on-disk storage in one import: where the metadata log and `quorum-state` live in a log
dir, the file-backed RaftLog and ElectionStore, and `kraft format`'s initial write."""

from __future__ import annotations

from pathlib import Path

from kraft.raft.disk_log import FileRaftLog, MetadataLogError
from kraft.raft.quorum_state import (
    QUORUM_STATE_FILE,
    FileElectionStore,
    QuorumStateError,
    write_initial,
)
from kraft.raft.snapshot_files import CorruptSnapshotError

__all__ = [
    "METADATA_LOG_DIR",
    "QUORUM_STATE_FILE",
    "CorruptSnapshotError",
    "FileElectionStore",
    "FileRaftLog",
    "MetadataLogError",
    "QuorumStateError",
    "metadata_log_dir",
    "quorum_state_path",
    "write_initial",
]

METADATA_LOG_DIR = "__cluster_metadata-0"


def metadata_log_dir(log_dir: Path) -> Path:
    return Path(log_dir) / METADATA_LOG_DIR


def quorum_state_path(log_dir: Path) -> Path:
    # Kafka keeps quorum-state inside the metadata partition dir; so do we.
    return metadata_log_dir(log_dir) / QUORUM_STATE_FILE
