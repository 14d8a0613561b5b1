"""Producers idle for producer.id.expiration.ms (by their last batch's timestamp, as Kafka) are
forgotten, so producer state does not grow forever; a fake clock drives it."""

from __future__ import annotations

from broker.idempotence.producer_state import ProducerStateManager
from broker.replication.replica_manager import ReplicaManager
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

DAY = 86_400_000


def test_only_producers_idle_for_the_expiration_are_forgotten():
    state = ProducerStateManager("t-0")
    state.on_batch_appended(1, 0, 0, 4, 0, 4, timestamp=1_000)
    state.on_batch_appended(2, 0, 0, 4, 5, 9, timestamp=1_000)
    state.on_batch_appended(2, 0, 5, 9, 10, 14, timestamp=1_000 + DAY // 2)  # 2 stays active
    assert state.remove_expired_producers(now_ms=1_000 + DAY - 1, expiration_ms=DAY) == []
    assert state.remove_expired_producers(now_ms=1_000 + DAY, expiration_ms=DAY) == [1]
    assert sorted(state.producers) == [2]
    # Back after expiry: an unknown producer id, taken at the sequence it is at (as Kafka).
    assert state.check(1, 0, 5, 9).is_append
    assert state.remove_expired_producers(now_ms=1_000 + 2 * DAY, expiration_ms=DAY) == [2]
    assert state.producers == {}


def batch(producer_id: int, seq: int, timestamp: int) -> bytes:
    return encode_batch(
        [(None, b"v", (), timestamp)], producer_id=producer_id, producer_epoch=0, base_sequence=seq
    )


def test_the_replica_manager_expires_idle_producers_on_every_partition(tmp_path):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    for p in (0, 1):
        replicas.apply_registration(
            "t",
            p,
            "id",
            LogConfig(),
            PartitionRegistration(
                replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1
            ),
        )
    assert replicas.append("t", 0, batch(7, 0, 1_000), 1, 0).error_code == 0
    assert replicas.append("t", 1, batch(8, 0, 1_000), 1, 0).error_code == 0
    assert replicas.append("t", 1, batch(9, 0, 5_000), 1, 0).error_code == 0
    assert replicas.remove_expired_producers(now_ms=1_000 + DAY, expiration_ms=DAY) == 2
    assert list(replicas.producer_state("t", 0).producers) == []
    assert list(replicas.producer_state("t", 1).producers) == [9]
    # The expired producer sends on, where it was: accepted, not failed (Kafka since KIP-360).
    assert replicas.append("t", 1, batch(8, 1, 1_000 + DAY), 1, 0).error_code == 0
