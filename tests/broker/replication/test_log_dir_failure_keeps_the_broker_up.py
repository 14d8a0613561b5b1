"""A log dir that fails (ENOSPC while a partition is created during metadata replay, EIO later)
never raises out of the broker: the dir goes offline once, with one clear ERROR line, its
partitions answer KAFKA_STORAGE_ERROR, and the log manager lists them for the heartbeat."""

from __future__ import annotations

import errno
import logging
import os

import kraft.log.log as log_module
from broker.metadata.publisher import BrokerMetadata
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.records import PartitionRecord, RegisterBrokerRecord, TopicRecord

NODE = 1


def _broker(log_dir):
    manager = LogManager([log_dir], LogConfig(), now_ms=0)
    replicas = ReplicaManager(manager, NODE, clock_ms=lambda: 0)
    return manager, replicas, BrokerMetadata(NODE, replicas, {})


def _create(metadata, offset, name, partitions=1):
    topic_id = f"{offset:032x}"
    records = [(offset, 1, TopicRecord(name, topic_id))]
    records += [
        (offset + 1 + p, 1, PartitionRecord(topic_id, p, (NODE,), (NODE,), NODE))
        for p in range(partitions)
    ]
    metadata.replay_committed(records)


def _register(metadata):
    metadata.replay_committed([(0, 1, RegisterBrokerRecord(NODE, "inc", 1, "h", 1, fenced=False))])


def _no_space(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "partition.metadata")


def test_enospc_creating_a_partition_takes_the_dir_offline_not_the_node(
    tmp_path, monkeypatch, caplog
):
    manager, replicas, metadata = _broker(tmp_path / "data")
    _register(metadata)
    _create(metadata, 10, "fine")
    assert replicas.get("fine", 0) is not None
    monkeypatch.setattr(log_module, "write_partition_metadata", _no_space)
    with caplog.at_level(logging.ERROR):
        _create(metadata, 20, "orders", partitions=2)  # must not raise
        _create(metadata, 30, "more")
    assert replicas.get("orders", 0) is None and replicas.get("fine", 0) is None
    for topic, p in (("orders", 0), ("orders", 1), ("fine", 0), ("more", 0)):
        answer = replicas.read(topic, p, 0, 1024)
        assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert str(tmp_path / "data") in answer.error_message
    assert ("fine", 0) in manager.offline_partitions()
    assert ("orders", 0) in manager.offline_partitions()
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert "No space left on device" in failures[0].getMessage()
    assert "free space" in failures[0].getMessage()
    produced = replicas.append("fine", 0, b"x" * 70, 1, 0)
    assert produced.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    manager.close()  # closing a half-failed manager does not raise either


def test_an_eio_flush_takes_the_dir_offline_once(tmp_path, monkeypatch, caplog):
    manager, replicas, metadata = _broker(tmp_path / "data")
    _register(metadata)
    _create(metadata, 10, "t", partitions=3)
    for p in range(3):
        assert replicas.append("t", p, _batch(), 1, 0).error_code == 0

    def eio(_fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", eio)
    with caplog.at_level(logging.ERROR):
        manager.flush_due(10**12)
        manager.checkpoint()
    assert manager.offline_partitions() == [("t", 0), ("t", 1), ("t", 2)]
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    assert replicas.partitions() == []


def _batch() -> bytes:
    return encode_batch([(None, b"v", (), 1000)])


class _Channel:
    """Records heartbeats and answers them as an active controller would (unfenced)."""

    def __init__(self) -> None:
        self.sent = []

    async def send(self, request, timeout_s):
        from kraft.controller.messages import BrokerHeartbeatResponse, RegisterBrokerResponse

        self.sent.append(request)
        if type(request).__name__ == "RegisterBrokerRequest":
            return RegisterBrokerResponse(broker_epoch=1)
        return BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)


async def test_the_heartbeat_reports_the_offline_replicas(tmp_path, monkeypatch, autojump_clock):
    import trio

    from broker.server.lifecycle import BrokerEpoch, BrokerLifecycle

    manager, replicas, metadata = _broker(tmp_path / "data")
    _register(metadata)
    _create(metadata, 10, "fine", partitions=2)
    monkeypatch.setattr(os, "fsync", lambda _fd: _no_space())
    manager.flush_due(10**12)
    manager.checkpoint()
    topic_id = metadata.image.topic("fine").topic_id
    assert metadata.offline_replicas() == ((topic_id, 0), (topic_id, 1))
    channel = _Channel()
    lifecycle = BrokerLifecycle(NODE, "h", 1, None, channel, metadata, BrokerEpoch(), 1000)
    with trio.move_on_after(3):
        await lifecycle.run()
    heartbeats = [r for r in channel.sent if type(r).__name__ == "BrokerHeartbeatRequest"]
    assert heartbeats and heartbeats[-1].offline_replicas == ((topic_id, 0), (topic_id, 1))
