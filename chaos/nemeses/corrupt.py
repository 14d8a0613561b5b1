"""The `corrupt` nemesis (Jepsen's file-corruption faults, bitflip and truncate): on a broker it
has just killed with -9, damage one partition's files past the recovery point, then restart it.
The damage is what a crash or a bad disk leaves where kraft has not fsynced yet: one byte flipped
inside a batch (its CRC no longer matches), the active segment's tail cut mid-batch (a torn
write), or an offset index flipped or cut. Recovery must scan those segments, cut the log at the
first bad batch and rebuild the indexes, and the replica then refetches the rest from its leader;
damage below the recovery point would instead take the replica offline (SegmentCorrupt), so this
nemesis never aims there. The audit then proves no damage was served.

Only partition logs are damaged, never `__cluster_metadata` (the Raft log is kraft.raft's: its
own recovery is another fault)."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import random

from kraft.log import file_names as fn
from kraft.log.checkpoint import CheckpointError, read_offset_checkpoint

KINDS = ("bitflip", "truncate", "index-bitflip", "index-truncate")
LOG_OVERHEAD = 12  # base offset (8) + batch length (4)
CRC_FROM = 21  # the CRC32C covers attributes onward: a flip there fails it
LAST_OFFSET_DELTA_AT = 23


@dataclasses.dataclass(frozen=True)
class Batch:
    position: int
    base_offset: int
    last_offset: int
    size: int  # LOG_OVERHEAD + batch length


@dataclasses.dataclass(frozen=True)
class Damage:
    kind: str
    path: pathlib.Path
    position: int  # the byte flipped, or the new length
    base_offset: int  # of the batch hit (for index damage, of the segment)
    recovery_point: int

    def describe(self) -> str:
        what = {
            "bitflip": "flipped a byte at",
            "truncate": "cut the file at",
            "index-bitflip": "flipped a byte at",
            "index-truncate": "cut the file at",
        }[self.kind]
        return (
            f"{self.kind}: {what} {self.position} of {self.path.parent.name}/{self.path.name} "
            f"(batch at offset {self.base_offset}, recovery point {self.recovery_point})"
        )


def batches(path: pathlib.Path) -> list[Batch]:
    """The whole batches of a segment file, by their framing only (no CRC check)."""
    out, data = [], path.read_bytes()
    pos = 0
    while pos + LOG_OVERHEAD + 15 <= len(data):
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if length < 49 or pos + LOG_OVERHEAD + length > len(data):
            break
        base = int.from_bytes(data[pos : pos + 8], "big", signed=True)
        delta = int.from_bytes(
            data[pos + LAST_OFFSET_DELTA_AT : pos + LAST_OFFSET_DELTA_AT + 4], "big"
        )
        out.append(Batch(pos, base, base + delta, LOG_OVERHEAD + length))
        pos += LOG_OVERHEAD + length
    return out


def recovery_points(data_dir: pathlib.Path) -> dict[tuple[str, int], int]:
    try:
        return read_offset_checkpoint(data_dir / fn.RECOVERY_POINT_CHECKPOINT)
    except CheckpointError:
        return {}  # kraft then recovers every log in full: any damage is past the point


def candidates(data_dir: pathlib.Path) -> list[tuple[pathlib.Path, Batch, bool, int]]:
    """(segment, batch, is the last segment, recovery point) for every batch whose base offset
    is at or past its partition's recovery point: the bytes recovery scans."""
    points = recovery_points(data_dir)
    out = []
    for part in sorted(p for p in data_dir.iterdir() if p.is_dir()):
        tp = fn.parse_topic_partition(part.name)
        if tp is None or tp[0] == fn.METADATA_TOPIC:
            continue
        point = points.get(tp, 0)
        segs = sorted(s for s in part.iterdir() if s.name.endswith(fn.LOG_SUFFIX))
        for i, seg in enumerate(segs):
            out += [
                (seg, b, i == len(segs) - 1, point) for b in batches(seg) if b.base_offset >= point
            ]
    return out


def choose(data_dir: pathlib.Path, rng: random.Random) -> Damage | None:
    """The damage to do, or None when nothing lies past a recovery point (all flushed)."""
    found = candidates(data_dir)
    if not found:
        return None
    seg, batch, last, point = rng.choice(found)
    kinds = [k for k in KINDS if last or k != "truncate"]  # a torn write is at the end
    index = seg.with_suffix(fn.INDEX_SUFFIX)
    if not index.exists() or index.stat().st_size < 8:
        kinds = [k for k in kinds if not k.startswith("index")]
    kind = rng.choice(kinds)
    if kind == "bitflip":
        at = rng.randrange(batch.position + CRC_FROM, batch.position + batch.size)
        return Damage(kind, seg, at, batch.base_offset, point)
    if kind == "truncate":
        at = rng.randrange(batch.position + 1, batch.position + batch.size)
        return Damage(kind, seg, at, batch.base_offset, point)
    size = index.stat().st_size
    if kind == "index-bitflip":
        return Damage(kind, index, rng.randrange(0, size), seg_base(seg), point)
    return Damage(
        kind, index, rng.randrange(1, size) | 1, seg_base(seg), point
    )  # odd: no entry fits


def seg_base(seg: pathlib.Path) -> int:
    return int(seg.name.split(".")[0])


def apply(damage: Damage) -> None:
    if damage.kind.endswith("truncate"):
        os.truncate(damage.path, damage.position)
        return
    with open(damage.path, "r+b") as f:
        f.seek(damage.position)
        byte = f.read(1)[0]
        f.seek(damage.position)
        f.write(bytes([byte ^ 0xFF]))


def damage_node(data_dir: pathlib.Path, rng: random.Random) -> Damage | None:
    """Choose and do one damage in a stopped node's data dir."""
    damage = choose(pathlib.Path(data_dir), rng)
    if damage is not None:
        apply(damage)
    return damage
