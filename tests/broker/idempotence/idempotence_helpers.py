"""Shared by the replica manager's producer tests: idempotent batches of one producer, and a
partition hosted as the metadata log would say."""

from __future__ import annotations

from broker.replication.replica_manager import ReplicaManager
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

PID = 42


def batch(seq: int, n: int = 2, epoch: int = 0, base_offset: int = 0, leader_epoch: int = -1):
    return encode_batch(
        [(None, b"v", (), 1000)] * n,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        producer_id=PID,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def host(replicas: ReplicaManager, leader: int, leader_epoch: int) -> None:
    """What the metadata log would say: replicas 1 and 2, both in sync, `leader` leads."""
    reg = PartitionRegistration(
        replicas=(1, 2),
        isr=(1, 2),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=leader_epoch,
    )
    replicas.apply_registration("t", 0, "topic-id", LogConfig(), reg)


def leader(tmp_path) -> ReplicaManager:
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    host(replicas, leader=1, leader_epoch=1)
    return replicas
