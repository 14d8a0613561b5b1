"""The power nemesis: through a lazyfs mount, a file written and fsynced survives a power cut, one
written and not synced comes back as of its last sync (or not at all when its name never was),
a rename or unlink not followed by a directory fsync is undone, and a clean unmount loses
nothing and leaves a plain dir behind."""

from __future__ import annotations

import os

import pytest

from chaos.nemeses.power import PowerFaults, leftover_mounts, unavailable
from tests.system_tools import INSTALL_POWER


@pytest.fixture
def mounted(tmp_path):
    reason = unavailable()
    if reason:
        pytest.skip(f"{reason} (CI installs it: {INSTALL_POWER})")
    data = tmp_path / "node-1" / "data"
    faults = PowerFaults({1: data})
    try:
        faults.mount_all()
        yield faults, data
    finally:
        faults.unmount_all()
        faults.restore()
        assert leftover_mounts([tmp_path]) == []


def write(path, data: bytes, sync: bool) -> None:
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def fsync_dir(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_synced_data_survives_and_unsynced_comes_back_as_of_the_last_sync(mounted):
    faults, data = mounted
    (data / "p-0").mkdir()
    fsync_dir(data)
    seg = data / "p-0" / "00000000000000000000.log"
    write(seg, b"synced-", sync=True)
    fsync_dir(data / "p-0")
    write(seg, b"lost", sync=False)
    (data / "p-0" / "never-synced").write_bytes(b"x")
    fsync_dir(data / "p-0")  # its name is durable, its bytes are not
    assert seg.read_bytes() == b"synced-lost"

    assert "5 bytes of sizes and 0 names undone" in faults.cut(1)
    assert seg.read_bytes() == b"synced-"
    assert (data / "p-0" / "never-synced").read_bytes() == b""
    write(seg, b"again", sync=True)  # the new mount takes writes as the old one did
    faults.cut(1)
    assert seg.read_bytes() == b"synced-again"


def test_a_truncation_not_synced_is_undone(mounted):
    faults, data = mounted
    f = data / "index"
    write(f, b"0123456789", sync=True)
    fsync_dir(data)
    os.truncate(f, 4)
    write(f, b"ab", sync=False)
    assert f.read_bytes() == b"0123ab"
    faults.cut(1)
    assert f.read_bytes() == b"0123456789"


def test_a_file_whose_name_was_never_synced_is_gone(mounted):
    faults, data = mounted
    write(data / "new", b"fsynced, but not its dir", sync=True)
    faults.cut(1)
    assert not (data / "new").exists()


def test_a_rename_without_a_directory_fsync_is_undone(mounted):
    faults, data = mounted
    write(data / "checkpoint", b"old", sync=True)
    fsync_dir(data)
    write(data / "checkpoint.tmp", b"new", sync=True)  # kraft's atomic write, minus the dir sync
    os.replace(data / "checkpoint.tmp", data / "checkpoint")
    (data / "gone").mkdir()
    assert (data / "checkpoint").read_bytes() == b"new"

    # gone/ goes; the new checkpoint, fsynced under a name never synced, is reclaimed
    assert "1 names undone, 1 nameless files reclaimed" in faults.cut(1)
    assert (data / "checkpoint").read_bytes() == b"old"
    assert sorted(p.name for p in data.iterdir()) == ["checkpoint"]

    write(data / "checkpoint.tmp", b"new", sync=True)
    os.replace(data / "checkpoint.tmp", data / "checkpoint")
    fsync_dir(data)  # now the rename is durable
    faults.cut(1)
    assert (data / "checkpoint").read_bytes() == b"new"
    assert sorted(p.name for p in data.iterdir()) == ["checkpoint"]


def test_an_unlink_without_a_directory_fsync_is_undone(mounted):
    faults, data = mounted
    write(data / "segment", b"batch", sync=True)
    fsync_dir(data)
    (data / "segment").unlink()
    faults.cut(1)
    assert (data / "segment").read_bytes() == b"batch"


def test_a_clean_unmount_keeps_everything_in_a_plain_dir(mounted):
    faults, data = mounted
    (data / "p-0").mkdir()
    write(data / "p-0" / "log", b"unsynced but kept", sync=False)
    faults.unmount_all()
    assert faults.restore() and not os.path.ismount(data)
    assert (data / "p-0" / "log").read_bytes() == b"unsynced but kept"
    assert sorted(p.name for p in data.iterdir()) == ["p-0"]
    assert faults.unmount_all() == [] and faults.restore() == []  # again: nothing to do
