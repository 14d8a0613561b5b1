"""Kafka's file and directory names for a log: segment files named by base offset, the
per-partition and per-log-dir checkpoint files, and `<topic>-<partition>` directories."""

from __future__ import annotations

from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".checkpoint"
# Left behind by an interrupted write, delete or compaction: never data we still need.
STRAY_SUFFIXES = (".tmp", ".deleted", ".cleaned")
DELETE_DIR_SUFFIX = "-delete"

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # per log dir: first dirty offset
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
# The KRaft metadata partition (`__cluster_metadata-0`): kept by kraft.raft, not by LogManager.
METADATA_TOPIC = "__cluster_metadata"


def offset_prefix(offset: int) -> str:
    return f"{offset:020d}"


def log_file(dir: Path, base_offset: int) -> Path:
    return dir / (offset_prefix(base_offset) + LOG_SUFFIX)


def index_file(dir: Path, base_offset: int) -> Path:
    return dir / (offset_prefix(base_offset) + INDEX_SUFFIX)


def time_index_file(dir: Path, base_offset: int) -> Path:
    return dir / (offset_prefix(base_offset) + TIME_INDEX_SUFFIX)


def txn_index_file(dir: Path, base_offset: int) -> Path:
    return dir / (offset_prefix(base_offset) + TXN_INDEX_SUFFIX)


def snapshot_file(dir: Path, end_offset: int, epoch: int) -> Path:
    """Raft snapshot `<endOffset:020d>-<epoch:010d>.checkpoint`."""
    return dir / f"{end_offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_base_offset(name: str, suffix: str) -> int | None:
    """`00000000000000000042.log` -> 42 for suffix `.log`; None if the name is not of that form."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_topic_partition(dir_name: str) -> tuple[str, int] | None:
    """`orders-3` -> ("orders", 3); topics may contain '-', the partition is after the last one."""
    topic, sep, partition = dir_name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)
