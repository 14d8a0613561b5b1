"""Raft snapshot files `<endOffset:020d>-<epoch:010d>.checkpoint` beside the metadata log, written
as `.part`, fsynced, renamed, dir fsynced (hashicorp/raft); a CRC32C header finds damage."""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

import google_crc32c

from kraft.fs import fsync_dir, remove_durably, write_all
from kraft.log import file_names
from kraft.raft.log import OffsetAndEpoch

PART_SUFFIX = ".part"
# magic, format version, data length, CRC32C of the data. The length catches a torn write that
# still ends on a CRC-valid prefix; the magic catches a file that is not ours at all.
MAGIC = b"KRSN"
FORMAT_VERSION = 1
_HEADER = struct.Struct(">4sBqI")

_log = logging.getLogger(__name__)


class CorruptSnapshotError(Exception):
    """A snapshot file whose header, length or CRC does not check out."""


def snapshot_path(dir: Path, snapshot_id: OffsetAndEpoch) -> Path:
    return file_names.snapshot_file(dir, snapshot_id.offset, snapshot_id.epoch)


def parse_snapshot_name(name: str) -> OffsetAndEpoch | None:
    """`00000000000000000042-0000000003.checkpoint` -> (42, 3); None for any other name."""
    if not name.endswith(file_names.SNAPSHOT_SUFFIX):
        return None
    offset, sep, epoch = name[: -len(file_names.SNAPSHOT_SUFFIX)].partition("-")
    if not sep or len(offset) != 20 or len(epoch) != 10 or not (offset + epoch).isdigit():
        return None
    return OffsetAndEpoch(int(offset), int(epoch))


def encode_snapshot(data: bytes) -> bytes:
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(data), google_crc32c.value(data)) + data


def decode_snapshot(raw: bytes, path: Path) -> bytes:
    """The data inside a snapshot file; raises CorruptSnapshotError naming `path` and the damage."""
    if len(raw) < _HEADER.size:
        raise CorruptSnapshotError(
            f"snapshot {path} is torn: {len(raw)} bytes, shorter than "
            f"its {_HEADER.size}-byte header"
        )
    magic, version, length, crc = _HEADER.unpack_from(raw)
    if magic != MAGIC or version != FORMAT_VERSION:
        raise CorruptSnapshotError(
            f"snapshot {path} has an unknown header (magic {magic!r}, version {version})"
        )
    data = raw[_HEADER.size :]
    if len(data) != length:
        raise CorruptSnapshotError(
            f"snapshot {path} is torn: header says {length} bytes of "
            f"data, the file holds {len(data)}"
        )
    actual = google_crc32c.value(data)
    if actual != crc:
        raise CorruptSnapshotError(
            f"snapshot {path} is corrupt: CRC32C stored {crc:#010x}, computed {actual:#010x}"
        )
    return data


def write_snapshot(dir: Path, snapshot_id: OffsetAndEpoch, data: bytes) -> Path:
    """Durable when it returns: a crash before the rename leaves only a `.part`, removed on open."""
    path = snapshot_path(dir, snapshot_id)
    part = path.with_name(path.name + PART_SUFFIX)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, encode_snapshot(data))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(part, path)
    fsync_dir(dir)
    return path


def read_snapshot(dir: Path, snapshot_id: OffsetAndEpoch) -> bytes | None:
    """None when the file does not exist; raises CorruptSnapshotError when it is damaged."""
    path = snapshot_path(dir, snapshot_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode_snapshot(raw, path)


def read_snapshot_chunk(
    dir: Path, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
) -> tuple[int, bytes] | None:
    """(size of the data, data[position:position + max_bytes]) reading only that chunk, so sending
    a snapshot costs one pass over it, not one per chunk. The first chunk (position 0) checks
    the whole file's CRC first: once per transfer, a leader never starts sending a damaged one.
    None when the file does not exist or `position` is past its end."""
    path = snapshot_path(dir, snapshot_id)
    if position == 0:
        data = read_snapshot(dir, snapshot_id)
        return None if data is None else (len(data), data[:max_bytes])
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        header = os.pread(fd, _HEADER.size, 0)
        if len(header) < _HEADER.size:
            raise CorruptSnapshotError(
                f"snapshot {path} is torn: {len(header)} bytes, shorter "
                f"than its {_HEADER.size}-byte header"
            )
        magic, version, length, _crc = _HEADER.unpack(header)
        on_disk = os.fstat(fd).st_size - _HEADER.size
        if magic != MAGIC or version != FORMAT_VERSION or on_disk != length:
            raise CorruptSnapshotError(
                f"snapshot {path} changed since it was checked (header "
                f"{magic!r} v{version}, {length} bytes, file holds {on_disk})"
            )
        if position > length:
            return None
        return length, os.pread(fd, min(max_bytes, length - position), _HEADER.size + position)
    finally:
        os.close(fd)


def delete_snapshot(dir: Path, snapshot_id: OffsetAndEpoch) -> None:
    remove_durably(snapshot_path(dir, snapshot_id))


def scan_snapshots(dir: Path) -> tuple[list[OffsetAndEpoch], list[Path]]:
    """At open: delete `.part` leftovers, verify every snapshot. Returns (readable snapshot ids
    sorted by offset, damaged files). Damaged files are kept for an operator to inspect."""
    valid: list[OffsetAndEpoch] = []
    damaged: list[Path] = []
    for entry in sorted(os.scandir(dir), key=lambda e: e.name):
        if entry.name.endswith(file_names.SNAPSHOT_SUFFIX + PART_SUFFIX):
            remove_durably(Path(entry.path))
            continue
        snapshot_id = parse_snapshot_name(entry.name)
        if snapshot_id is None:
            continue
        try:
            decode_snapshot(Path(entry.path).read_bytes(), Path(entry.path))
        except CorruptSnapshotError as e:
            _log.warning("%s; ignoring it (a leader can send this node a fresh snapshot)", e)
            damaged.append(Path(entry.path))
            continue
        valid.append(snapshot_id)
    valid.sort()
    return valid, damaged
