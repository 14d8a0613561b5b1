"""Finds what the audit reads, read-only and on the driver: node data dirs under each --data path,
their partition segment files, checkpoints, quorum-state and metadata snapshots."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kraft.log import file_names as fn
from kraft.log.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    read_properties,
)

METADATA_TOPIC = fn.METADATA_TOPIC
METADATA_DIR = f"{METADATA_TOPIC}-0"
QUORUM_STATE = "quorum-state"  # kraft/raft/quorum_state.py's file, inside METADATA_DIR
SCAN_DEPTH = 4  # <D>/node-<id>/data is depth 2; leave room for one more level


class AuditInputError(ValueError):
    """Input the audit cannot read at all (exit 2); the message says which path and why."""


@dataclass(frozen=True)
class SegmentFile:
    replica: int
    topic: str
    partition: int
    segment: int  # base offset in the file name
    path: str
    index_path: str
    size: int
    is_last: bool  # the partition's active segment: only there may a crash tear a batch


@dataclass
class NodeFiles:
    node_id: int
    log_dir: Path
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    # (topic, partition) -> [(epoch, start_offset)], or the reason it could not be read
    epoch_checkpoints: dict[tuple[str, int], list[tuple[int, int]] | str] = field(
        default_factory=dict
    )
    quorum_state: dict | None = None  # the quorum-state JSON, when readable
    snapshots: list[tuple[int, int, Path]] = field(
        default_factory=list
    )  # (end offset, epoch, path)


@dataclass
class ClusterFiles:
    nodes: list[NodeFiles]
    segments: list[SegmentFile]
    notices: list[str]

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.segments)


def find_node_dirs(paths) -> list[Path]:
    """Each path is a node data dir (holds meta.properties) or a parent searched for them."""
    found = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise AuditInputError(f"--data {path}: no such directory")
        if (path / fn.META_PROPERTIES).exists():
            found.append(path)
            continue
        before = len(found)
        base_depth = len(path.parts)
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("__") and "-delete" not in d)
            if fn.META_PROPERTIES in files:
                found.append(Path(root))
                dirs[:] = []
            elif len(Path(root).parts) - base_depth >= SCAN_DEPTH:
                dirs[:] = []
        if len(found) == before:
            raise AuditInputError(
                f"--data {path}: no node data dir (one holding meta.properties) "
                f"found in it; point --data at e.g. <dev dir>/node-1/data or at "
                f"the `kraft dev --data` dir"
            )
    return sorted(set(found))


def _node_id(log_dir: Path) -> int:
    try:
        props = read_properties(log_dir / fn.META_PROPERTIES) or {}
        return int(props["node.id"])
    except (CheckpointError, KeyError, ValueError, OSError) as exc:
        raise AuditInputError(
            f"{log_dir / fn.META_PROPERTIES}: no readable node.id ({exc})"
        ) from None


def _segments(node_id: int, pdir: Path, topic: str, partition: int) -> list[SegmentFile]:
    bases = sorted(
        b
        for b in (fn.parse_base_offset(e.name, fn.LOG_SUFFIX) for e in os.scandir(pdir))
        if b is not None
    )
    out = []
    for i, base in enumerate(bases):
        path = fn.log_file(pdir, base)
        out.append(
            SegmentFile(
                node_id,
                topic,
                partition,
                base,
                str(path),
                str(fn.index_file(pdir, base)),
                path.stat().st_size,
                i == len(bases) - 1,
            )
        )
    return out


def _read_quorum_state(path: Path, notices: list[str]) -> dict | None:
    import json

    try:
        doc = json.loads(path.read_text().splitlines()[0])
        return {
            "epoch": int(doc["leaderEpoch"]),
            "leader": int(doc["leaderId"]),
            "voters": sorted(int(v["voterId"]) for v in doc.get("currentVoters") or ()),
        }
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        notices.append(f"{path}: unreadable quorum-state ({exc}); its leader is not checked")
        return None


def _load_node(log_dir: Path, segments: list[SegmentFile], notices: list[str]) -> NodeFiles:
    from kraft.raft.snapshot_files import parse_snapshot_name

    node = NodeFiles(_node_id(log_dir), log_dir)
    try:
        node.high_watermarks = read_offset_checkpoint(log_dir / fn.REPLICATION_OFFSET_CHECKPOINT)
    except (CheckpointError, OSError) as exc:
        notices.append(f"{exc}: node {node.node_id}'s high watermarks are ignored")
    for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
        tp = fn.parse_topic_partition(entry.name) if entry.is_dir() else None
        if tp is None or entry.name.endswith(fn.DELETE_DIR_SUFFIX):
            continue
        pdir = Path(entry.path)
        segments.extend(_segments(node.node_id, pdir, *tp))
        if tp[0] == METADATA_TOPIC:
            node.quorum_state = _read_quorum_state(pdir / QUORUM_STATE, notices)
            for name in sorted(os.listdir(pdir)):
                snap = parse_snapshot_name(name)
                if snap is not None:
                    node.snapshots.append((snap.offset, snap.epoch, pdir / name))
            continue
        try:
            entries = read_epoch_checkpoint(pdir / fn.LEADER_EPOCH_CHECKPOINT)
            node.epoch_checkpoints[tp] = entries if entries is not None else "missing"
        except (CheckpointError, OSError) as exc:
            node.epoch_checkpoints[tp] = f"unreadable: {exc}"
    return node


def load_cluster(paths) -> ClusterFiles:
    """Everything the audit reads from --data, without opening any log for writing."""
    notices: list[str] = []
    segments: list[SegmentFile] = []
    nodes = [_load_node(d, segments, notices) for d in find_node_dirs(paths)]
    seen: dict[tuple[int, str, int], Path] = {}
    by_id: dict[int, Path] = {}
    for node in nodes:
        if node.node_id in by_id:
            # Several log dirs of one node: fine, as long as no partition is in two of them.
            notices.append(
                f"node {node.node_id} has log dirs {by_id[node.node_id]} and {node.log_dir}"
            )
        by_id[node.node_id] = node.log_dir
    for seg in segments:
        key = (seg.replica, seg.topic, seg.partition)
        pdir = Path(seg.path).parent
        if seen.setdefault(key, pdir) != pdir:
            raise AuditInputError(
                f"node {seg.replica} holds {seg.topic}-{seg.partition} twice: in "
                f"{seen[key]} and {pdir}; audit one copy (pass fewer --data dirs)"
            )
    return ClusterFiles(nodes, segments, notices)
