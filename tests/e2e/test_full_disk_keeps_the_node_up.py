"""A log dir on a full disk (a real 1 MiB tmpfs) while topics are created: the node stays up, the
partition placed there is offline (no leader once the heartbeat reported it) and the partitions
on its healthy log dir serve produce and fetch. Skipped where a tmpfs cannot be mounted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from processes import NodeProcess
from waiting import eventually

from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e


@pytest.fixture
def full_tmpfs(tmp_path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount) -> None:
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass  # ENOSPC: full
    finally:
        os.close(fd)


def _describe(kraft, bootstrap):
    done = kraft("topic", "describe", "orders", "--format", "json", "--bootstrap-server", bootstrap)
    return json.loads(done.stdout)["partitions"] if done.returncode == 0 else None


def test_enospc_creating_partitions_keeps_the_node_up_and_the_partition_offline(
    tmp_path, full_tmpfs, kraft
):
    data = tmp_path / "node1"
    node = NodeProcess(data, [f"log.dirs={data},{full_tmpfs / 'data'}"]).start()
    try:
        _fill(full_tmpfs)
        created = kraft("topic", "create", "orders", "-p", "4", "--bootstrap-server", node.address)
        assert created.returncode == 0, created.stderr
        offline = eventually(
            lambda: [
                p["partition"]
                for p in (_describe(kraft, node.address) or [])
                if p["leader"] in (-1, None)
            ],
            20,
            "a leaderless partition",
        )
        assert node.proc.poll() is None, "the node exited"
        assert 0 < len(offline) < 4
        healthy = next(p for p in range(4) if p not in offline)
        with Producer(node.address, acks=-1) as producer:
            sent = producer.send("orders", b"kept", partition=healthy)
            producer.flush(timeout=20)
        assert sent.exception() is None
        tp = TopicPartition("orders", healthy)
        with Consumer(node.address) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got = eventually(lambda: consumer.poll(timeout_ms=1000), 20, "the record back")
        assert [r.value for r in got] == [b"kept"]
        log = node.log_path.read_text()
        assert log.count("failed while creating") == 1 and "No space left on device" in log
    finally:
        assert node.stop() == 0
