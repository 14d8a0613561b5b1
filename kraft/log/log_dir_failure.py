"""Kafka's LogDirFailureChannel for one node: the log dirs that failed (any OSError: ENOSPC, EIO,
EMFILE...) and the single replicas whose files are damaged, each with its reason, logged once."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

_logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

_HINTS = {
    errno.ENOSPC: "free space on it",
    errno.EDQUOT: "raise the quota or free space",
    errno.EMFILE: "raise the open-file limit (ulimit -n) or host fewer partitions",
    errno.ENFILE: "raise the system's open-file limit (fs.file-max)",
    errno.EROFS: "remount it read-write",
    errno.EIO: "check the disk (dmesg)",
}


class StorageError(Exception):
    """A replica's log cannot be used: its log dir failed or its files are damaged (Kafka's
    KafkaStorageException). The message says which, why, and what to do."""


def describe_dir_failure(log_dir: Path, exc: BaseException, during: str) -> str:
    code = getattr(exc, "errno", None)
    hint = _HINTS.get(code, "check the disk and its permissions")
    return (
        f"log dir {log_dir} failed while {during}: {exc}; its partitions are offline on this "
        f"broker and their leadership moves to other replicas. To bring it back, {hint}, then "
        "restart this node"
    )


class LogDirFailures:
    """What is offline and why. Pure bookkeeping: the LogManager closes the logs, the replica
    manager stops serving them, the broker's heartbeat reports them to the controller."""

    def __init__(self) -> None:
        self.offline_dirs: dict[Path, str] = {}
        self.offline_replicas: dict[TopicPartition, str] = {}

    def fail_dir(self, log_dir: Path, exc: BaseException, during: str) -> bool:
        """Record the dir as failed; True (and one ERROR line) only the first time."""
        if log_dir in self.offline_dirs:
            return False
        self.offline_dirs[log_dir] = reason = describe_dir_failure(log_dir, exc, during)
        _logger.error("%s", reason)
        return True

    def fail_replica(self, tp: TopicPartition, reason: str) -> bool:
        """Record the replica as offline; True (and one ERROR line) only the first time."""
        if tp in self.offline_replicas:
            return False
        self.offline_replicas[tp] = reason
        _logger.error("%s", reason)
        return True

    def forget_replica(self, tp: TopicPartition) -> None:
        self.offline_replicas.pop(tp, None)

    def is_dir_offline(self, log_dir: Path) -> bool:
        return log_dir in self.offline_dirs


def damaged_replica_reason(topic: str, partition: int, dir: Path, problem: object) -> str:
    return (
        f"replica {topic}-{partition} is offline on this broker: its log in {dir} is damaged "
        f"({problem}). Nothing was cut or skipped; its leadership moves to other replicas. "
        f"Restore the files, or delete {dir} and restart this node so the replica is rebuilt "
        "from the leader (records only it held are then lost)"
    )
