"""The text of every checkpoint file is exactly Kafka's; bytes that are not text are a
CheckpointError naming the file, like any other damage."""

import pytest
from kraft_log_helpers import make_batch

from kraft.fs import atomic_write
from kraft.log.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager, read_meta_properties, write_meta_properties


def test_offset_checkpoint_text(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {("orders", 1): 42, ("orders", 0): 7, ("a-b", 3): 0})
    assert path.read_text() == "0\n3\na-b 3 0\norders 0 7\norders 1 42\n"
    assert read_offset_checkpoint(path) == {("orders", 1): 42, ("orders", 0): 7, ("a-b", 3): 0}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_partition_metadata_and_meta_properties_text(tmp_path):
    write_partition_metadata(tmp_path / "partition.metadata", "Xc8ZqLrWQ2CbzK0yF3v1sA")
    assert (
        tmp_path / "partition.metadata"
    ).read_text() == "version: 0\ntopic_id: Xc8ZqLrWQ2CbzK0yF3v1sA\n"
    assert read_partition_metadata(tmp_path / "partition.metadata") == "Xc8ZqLrWQ2CbzK0yF3v1sA"
    write_meta_properties(tmp_path, "clu5ter", 3)
    assert (
        tmp_path / "meta.properties"
    ).read_text() == "version=1\ncluster.id=clu5ter\nnode.id=3\n"
    assert read_meta_properties(tmp_path) == {
        "version": "1",
        "cluster.id": "clu5ter",
        "node.id": "3",
    }
    assert read_meta_properties(tmp_path / "nope") is None


def test_kafka_written_meta_properties_with_comments_parse(tmp_path):
    atomic_write(
        tmp_path / "meta.properties",
        "#\n#Thu Nov 21 10:00:00 UTC 2024\nnode.id=1\nversion=1\ncluster.id=abc\n",
    )
    assert read_meta_properties(tmp_path)["cluster.id"] == "abc"


def test_log_manager_writes_the_three_checkpoints_and_marker(tmp_path):
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    log = manager.get_or_create_log("orders", 0, topic_id="tid")
    log.append_as_leader(make_batch(5), 2, now_ms=0)
    log.high_watermark = 3
    manager.get_or_create_log("orders", 1)
    manager.close()
    assert (
        tmp_path / "recovery-point-offset-checkpoint"
    ).read_text() == "0\n2\norders 0 5\norders 1 0\n"
    assert (
        tmp_path / "log-start-offset-checkpoint"
    ).read_text() == "0\n2\norders 0 0\norders 1 0\n"
    assert (
        tmp_path / "replication-offset-checkpoint"
    ).read_text() == "0\n2\norders 0 3\norders 1 0\n"
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "orders-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n2 0\n"
    assert read_epoch_checkpoint(tmp_path / "orders-0" / "leader-epoch-checkpoint") == [(2, 0)]
    assert (
        tmp_path / "orders-0" / "partition.metadata"
    ).read_text() == "version: 0\ntopic_id: tid\n"
    assert sorted(p.name for p in (tmp_path / "orders-0").iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
        "partition.metadata",
    ]


@pytest.mark.parametrize(
    "read",
    [read_offset_checkpoint, read_epoch_checkpoint, read_partition_metadata, read_properties],
)
def test_bytes_that_are_not_text_are_a_checkpoint_error(tmp_path, read):
    path = tmp_path / "damaged"
    path.write_bytes(b"0\n1\n\xc3\x28 0 5\n")
    with pytest.raises(CheckpointError, match=r"damaged: byte 4 is not text \(0xc3\)"):
        read(path)
