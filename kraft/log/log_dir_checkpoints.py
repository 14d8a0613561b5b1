"""The files that describe a node's log dirs: meta.properties, and the offset checkpoints
(recovery point, log start, high watermark) taken on the loop as DirCheckpoints, written off it."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kraft.log import file_names as fn
from kraft.log.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    read_properties,
    write_offset_checkpoint,
    write_properties,
)

if TYPE_CHECKING:
    from kraft.log.log import Log

# LogManager's logger: these warnings went out under its name before this file split off.
_logger = logging.getLogger("kraft.log.log_manager")


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """meta.properties as a dict (keys `version`, `cluster.id`, `node.id`), None if absent."""
    return read_properties(Path(log_dir) / fn.META_PROPERTIES)


def write_meta_properties(log_dir: Path, cluster_id: str, node_id: int) -> None:
    write_properties(
        Path(log_dir) / fn.META_PROPERTIES,
        {"version": "1", "cluster.id": cluster_id, "node.id": str(node_id)},
    )


def read_checkpoint_or_empty(path: Path, fallback: str) -> dict[tuple[str, int], int] | None:
    """None when missing or damaged: the caller then assumes nothing (for the recovery points,
    a full recovery). A damaged file is worth a warning (`fallback`: what is done instead), never
    a failed start: its bytes are as untrusted as any other on the disk."""
    if not path.exists():
        return None
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as exc:
        _logger.warning("ignoring a damaged checkpoint: %s; %s", exc, fallback)
        return None


@dataclasses.dataclass(frozen=True)
class DirCheckpoints:
    log_dir: Path
    recovery_points: dict[tuple[str, int], int]
    log_start_offsets: dict[tuple[str, int], int]
    high_watermarks: dict[tuple[str, int], int]
    # The dir's logs: with `lock` held, a recovery point is written as the lower of the one
    # taken and the log's own, so a write that a truncation overtook cannot raise it again.
    logs: Mapping[tuple[str, int], Log] = dataclasses.field(default_factory=dict)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


def write_checkpoints(checkpoints: list[DirCheckpoints]) -> list[tuple[Path, OSError]]:
    """Write (crash-safe: tmp, fsync, rename) what `checkpoint_offsets` took; safe off the loop,
    as it touches only these values, the logs' recovery points (one int read each) and the
    checkpoint files. Returns the dirs that failed, for LogManager.checkpoints_failed (on the
    loop)."""
    failed = []
    for c in checkpoints:
        try:
            with c.lock:
                _write_dir_checkpoints(c)
        except OSError as exc:
            failed.append((c.log_dir, exc))
    return failed


def _write_dir_checkpoints(c: DirCheckpoints) -> None:
    recovery_points = {
        tp: min(offset, c.logs[tp].recovery_point) if tp in c.logs else offset
        for tp, offset in c.recovery_points.items()
    }
    write_offset_checkpoint(c.log_dir / fn.RECOVERY_POINT_CHECKPOINT, recovery_points)
    write_offset_checkpoint(c.log_dir / fn.LOG_START_OFFSET_CHECKPOINT, c.log_start_offsets)
    write_offset_checkpoint(c.log_dir / fn.REPLICATION_OFFSET_CHECKPOINT, c.high_watermarks)
