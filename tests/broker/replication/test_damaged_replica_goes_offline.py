"""A replica whose segment files were damaged goes offline on this broker instead of serving a
log with a hole: a segment deleted while the node ran is found at the restart, a damaged
baseOffset at the fetch that meets it; both fetches answer KAFKA_STORAGE_ERROR with the reason."""

from __future__ import annotations

import os

from broker.metadata.publisher import BrokerMetadata
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.records import PartitionRecord, RegisterBrokerRecord, TopicRecord

NODE = 1
TOPIC_ID = "ab" * 16
SMALL_SEGMENTS = {"segment.bytes": "1024"}


def _start(log_dir):
    manager = LogManager([log_dir], LogConfig.from_props(SMALL_SEGMENTS), now_ms=0)
    replicas = ReplicaManager(manager, NODE, clock_ms=lambda: 0)
    metadata = BrokerMetadata(NODE, replicas, SMALL_SEGMENTS)
    metadata.replay_committed(
        [
            (0, 1, RegisterBrokerRecord(NODE, "inc", 1, "h", 1, fenced=False)),
            (1, 1, TopicRecord("t", TOPIC_ID)),
            (2, 1, PartitionRecord(TOPIC_ID, 0, (NODE,), (NODE,), NODE)),
        ]
    )
    return manager, replicas, metadata


def _filled(log_dir, batches=40):
    manager, replicas, _ = _start(log_dir)
    for i in range(batches):
        done = replicas.append("t", 0, encode_batch([(None, b"v" * 60, (), 1000 + i)]), 1, 0)
        assert done.error_code == 0
    return manager, replicas, replicas.get("t", 0).log


def test_a_segment_deleted_under_a_running_node_takes_the_replica_offline_at_restart(tmp_path):
    manager, replicas, log = _filled(tmp_path / "data")
    assert log.segment_count >= 3
    doomed = log.segments[1]
    os.unlink(doomed.log_path)
    manager.close()
    manager, replicas, _ = _start(tmp_path / "data")
    assert replicas.get("t", 0) is None
    assert manager.offline_partitions() == [("t", 0)]
    answer = replicas.read("t", 0, doomed.base_offset, 1 << 20)
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert (
        f"offsets {doomed.base_offset} to {doomed.next_offset - 1} are missing"
        in answer.error_message
    )
    # Nothing was cut: the remaining segments are all still there.
    assert len(list((tmp_path / "data" / "t-0").glob("*.log"))) == log.segment_count - 1


def test_a_damaged_base_offset_fails_the_fetch_and_takes_the_replica_offline(tmp_path):
    manager, replicas, log = _filled(tmp_path / "data")
    old = log.segments[1]
    with open(old.log_path, "r+b") as f:
        f.write(b"\x7f")  # the top byte of the first batch's baseOffset
    answer = replicas.read("t", 0, old.base_offset, 1 << 20)
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR and answer.records == b""
    assert "baseOffset is damaged" in answer.error_message
    assert manager.offline_partitions() == [("t", 0)]
    again = replicas.read("t", 0, 0, 1 << 20)
    assert again.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert (
        replicas.append("t", 0, encode_batch([(None, b"v", (), 1)]), 1, 0).error_code
        == ErrorCode.KAFKA_STORAGE_ERROR
    )
    manager.close()


def test_deleting_the_topic_of_a_damaged_replica_forgets_it_and_its_files(tmp_path):
    from kraft.metadata.records import RemoveTopicRecord

    manager, replicas, log = _filled(tmp_path / "data")
    os.unlink(log.segments[1].log_path)
    manager.close()
    manager, replicas, metadata = _start(tmp_path / "data")
    assert manager.offline_partitions() == [("t", 0)]
    metadata.replay_committed([(3, 1, RemoveTopicRecord(TOPIC_ID))])
    assert manager.offline_partitions() == []
    assert not (tmp_path / "data" / "t-0").exists()
