"""Snapshot files: a torn or corrupt snapshot is found by its CRC32C header and ignored (and named)
at open, a `.part` leftover is removed, and a log that needed a lost snapshot refuses to open."""

import os

import pytest
from raft_storage_harness import entries

from kraft.raft.disk import CorruptSnapshotError, FileRaftLog, MetadataLogError, metadata_log_dir
from kraft.raft.log import OffsetAndEpoch
from kraft.raft.snapshot_files import (
    decode_snapshot,
    encode_snapshot,
    scan_snapshots,
    snapshot_path,
    write_snapshot,
)


def open_log(tmp_path, **kwargs):
    return FileRaftLog(metadata_log_dir(tmp_path), now_ms=0, **kwargs)


def damage(path, how):
    raw = bytearray(path.read_bytes())
    if how == "torn":
        raw = raw[: len(raw) - 3]
    elif how == "flipped":
        raw[-1] ^= 0x01
    else:
        raw = bytearray()
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["torn", "flipped", "empty"])
def test_decode_finds_every_kind_of_damage(tmp_path, how):
    path = tmp_path / "s.checkpoint"
    path.write_bytes(encode_snapshot(b"metadata image" * 10))
    assert decode_snapshot(path.read_bytes(), path) == b"metadata image" * 10
    damage(path, how)
    with pytest.raises(CorruptSnapshotError, match=str(path)):
        decode_snapshot(path.read_bytes(), path)


@pytest.mark.parametrize("how", ["torn", "flipped"])
def test_a_damaged_latest_snapshot_is_ignored_and_reported(tmp_path, how):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1, 1, 2, 2, 2, 2]))
    log.create_snapshot(OffsetAndEpoch(3, 1), b"old")
    log.create_snapshot(OffsetAndEpoch(6, 2), b"new")
    log.close()
    bad = snapshot_path(log.dir, OffsetAndEpoch(6, 2))
    damage(bad, how)
    log = open_log(tmp_path)  # one big segment: entries from 3 on are still there
    assert log.damaged_snapshots == [bad]
    assert log.latest_snapshot_id == OffsetAndEpoch(3, 1)
    assert log.read_snapshot(OffsetAndEpoch(6, 2)) is None
    assert log.log_start_offset == 3
    assert log.read(3, 10) == entries(3, [2, 2, 2, 2])


def test_a_log_whose_start_no_readable_snapshot_covers_refuses_to_open(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    log.append(entries(0, [1] * 20))
    log.create_snapshot(OffsetAndEpoch(15, 1), b"only copy")
    log.close()
    damage(snapshot_path(log.dir, OffsetAndEpoch(15, 1)), "flipped")
    with pytest.raises(MetadataLogError, match="no readable snapshot.*kraft format"):
        open_log(tmp_path, segment_bytes=300)


def test_a_part_leftover_is_removed_at_open(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1]))
    log.close()
    part = log.dir / "00000000000000000002-0000000001.checkpoint.part"
    part.write_bytes(encode_snapshot(b"half")[:9])
    log = open_log(tmp_path)
    assert not part.exists()
    assert log.latest_snapshot_id is None and log.damaged_snapshots == []


def test_write_snapshot_leaves_no_part_file(tmp_path):
    write_snapshot(tmp_path, OffsetAndEpoch(7, 3), b"data")
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000007-0000000003.checkpoint"]
    assert scan_snapshots(tmp_path) == ([OffsetAndEpoch(7, 3)], [])


def test_damage_after_open_is_an_error_not_an_empty_state(tmp_path):
    log = open_log(tmp_path)
    log.append(entries(0, [1, 1]))
    log.create_snapshot(OffsetAndEpoch(2, 1), b"state")
    damage(snapshot_path(log.dir, OffsetAndEpoch(2, 1)), "flipped")
    with pytest.raises(CorruptSnapshotError, match="CRC32C"):
        log.read_snapshot(OffsetAndEpoch(2, 1))
