"""The disk-full nemesis: a node's data dir is a tmpfs of its own; filling it makes the next
write fail with ENOSPC, emptying it lets writes through again, a log dir failure logged while
full asks for a restart, and unmounting leaves the files in a plain dir and no mount behind."""

from __future__ import annotations

import errno
import os

import pytest

from chaos.nemeses.disk import DiskError, DiskFaults, free_bytes, leftover_mounts


@pytest.fixture
def disks(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mount needs root")
    log = tmp_path / "node.log"
    log.write_text("started\n")
    faults = DiskFaults({1: tmp_path / "node-1" / "data"}, size="8m", log_of=lambda n: log)
    try:
        faults.mount_all()
        yield faults, tmp_path / "node-1" / "data", log
    finally:
        faults.unmount_all()
        assert leftover_mounts([tmp_path]) == []


def test_the_disk_fills_and_empties(disks):
    faults, data, _ = disks
    (data / "meta.properties").write_text("node.id=1\n")
    assert leftover_mounts([data.parent]) == [data]
    assert 7 << 20 < free_bytes(data) <= 8 << 20
    assert faults.fill(1) > 7 << 20
    assert free_bytes(data) == 0
    with pytest.raises(OSError) as caught, open(data / "00000000000000000000.log", "wb") as f:
        f.write(b"x" * 65536)
        f.flush()
        os.fsync(f.fileno())
    assert caught.value.errno == errno.ENOSPC
    assert faults.empty(1) is False  # the node logged no failed dir
    assert free_bytes(data) > 7 << 20
    (data / "00000000000000000000.log").write_bytes(b"x" * 65536)


def test_a_log_dir_failure_while_full_asks_for_a_restart(disks):
    faults, data, log = disks
    faults.fill(1)
    with open(log, "a") as f:
        f.write(f"ERROR log dir {data} failed while appending: [Errno 28] No space left\n")
    assert faults.empty_all() == [1]


def test_unmount_copies_the_files_back(disks, tmp_path):
    faults, data, _ = disks
    (data / "chaos-0").mkdir()
    (data / "chaos-0" / "00000000000000000000.log").write_bytes(b"batch")
    faults.fill(1)
    assert faults.unmount_all() and not os.path.ismount(data)
    assert (data / "chaos-0" / "00000000000000000000.log").read_bytes() == b"batch"
    assert not (data / ".chaos-disk-full").exists()
    assert faults.unmount_all() == []  # again: nothing to do


def test_a_data_dir_with_files_is_not_hidden(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mount needs root")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("x")
    with pytest.raises(DiskError, match="not empty"):
        DiskFaults({1: tmp_path / "data"}).mount_all()
