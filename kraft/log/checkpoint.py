"""Kafka's small text files: OffsetCheckpoint (recovery point, log start offset, HW),
leader-epoch-checkpoint, partition.metadata and meta.properties; all written crash-safely."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from kraft.fs import atomic_write

CHECKPOINT_VERSION = 0


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be parsed; the message names the file and line."""


def _read_text(path: Path) -> str | None:
    """The file's text, None when it is missing; CheckpointError when its bytes are not text
    (a torn or overwritten file: disk bytes are never trusted to decode)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            f"{path}: byte {exc.start} is not text ({data[exc.start]:#04x}); the file is damaged"
        ) from None


def _read_versioned(path: Path, fields: int) -> list[list[str]] | None:
    """Parse `version\\ncount\\n` then `count` lines of `fields` space-separated words."""
    text = _read_text(path)
    if text is None:
        return None
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: expected a version line and a count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(
            f"{path}: unsupported version {lines[0]!r} (only {CHECKPOINT_VERSION})"
        )
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: count line {lines[1]!r} is not a number") from None
    rows = [line.split() for line in lines[2:] if line.strip()]
    if len(rows) != count or any(len(row) != fields for row in rows):
        raise CheckpointError(f"{path}: expected {count} lines of {fields} fields, found {rows!r}")
    return rows


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines += [
        f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())
    ]
    atomic_write(path, "\n".join(lines) + "\n")


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """{} when the file is missing; CheckpointError when it is malformed."""
    rows = _read_versioned(path, 3)
    if rows is None:
        return {}
    try:
        return {(topic, int(partition)): int(offset) for topic, partition, offset in rows}
    except ValueError:
        raise CheckpointError(f"{path}: partition and offset must be numbers") from None


def write_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    entries = list(entries)
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{epoch} {start_offset}" for epoch, start_offset in entries]
    atomic_write(path, "\n".join(lines) + "\n")


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]] | None:
    """[(epoch, start_offset)]; None when the file is missing."""
    rows = _read_versioned(path, 2)
    if rows is None:
        return None
    try:
        return [(int(epoch), int(start)) for epoch, start in rows]
    except ValueError:
        raise CheckpointError(f"{path}: epoch and start offset must be numbers") from None


def write_partition_metadata(path: Path, topic_id: str) -> None:
    atomic_write(path, f"version: 0\ntopic_id: {topic_id}\n")


def read_partition_metadata(path: Path) -> str | None:
    """The topic id, or None when the file is missing."""
    text = _read_text(path)
    if text is None:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields.get("version", "").strip() != "0" or "topic_id" not in fields:
        raise CheckpointError(f"{path}: expected 'version: 0' and 'topic_id: <id>' lines")
    return fields["topic_id"].strip()


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    """Java-properties style, in the given order (Kafka's meta.properties)."""
    atomic_write(path, "".join(f"{key}={value}\n" for key, value in props.items()))


def read_properties(path: Path) -> dict[str, str] | None:
    """None when missing; skips blank lines and '#' / '!' comments."""
    text = _read_text(path)
    if text is None:
        return None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CheckpointError(f"{path}: line {line!r} is not key=value")
        props[key.strip()] = value.strip()
    return props
