"""The leader's append path consults the producer state before the log: a duplicate is answered
with its original offset, a gap or a fenced epoch with its error, and none of them is appended; a
follower that becomes leader (or a truncated log) brings the state in line with its log first."""

from __future__ import annotations

from idempotence_helpers import batch, host, leader

from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager


def test_duplicates_and_gaps_are_answered_without_an_append(tmp_path):
    replicas = leader(tmp_path)
    log = replicas.get("t", 0).log
    assert replicas.append("t", 0, batch(0), 1, 0).base_offset == 0
    assert replicas.append("t", 0, encode_batch([(None, b"x", (), 1)]), 1, 0).base_offset == 2
    assert replicas.append("t", 0, batch(2), 1, 0).base_offset == 3
    dup = replicas.append("t", 0, batch(0), 1, 0)
    assert (dup.error_code, dup.base_offset) == (0, 0)
    assert dup.last_offset == 1  # acks=all waits until the original copy is committed
    gap = replicas.append("t", 0, batch(9), 1, 0)
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert replicas.append("t", 0, batch(0, epoch=1), 1, 0).base_offset == 5
    fenced = replicas.append("t", 0, batch(4, epoch=0), 1, 0)
    assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 7
    corrupt = bytearray(batch(2, epoch=1))
    corrupt[-1] ^= 1
    assert replicas.append("t", 0, bytes(corrupt), 1, 0).error_code == ErrorCode.CORRUPT_MESSAGE


def test_a_follower_becoming_leader_knows_what_it_replicated(tmp_path):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=2)
    host(replicas, leader=1, leader_epoch=1)
    log = replicas.get("t", 0).log
    log.append_as_follower(batch(0, base_offset=0, leader_epoch=1))
    log.append_as_follower(batch(2, base_offset=2, leader_epoch=1))  # nobody told the state
    host(replicas, leader=2, leader_epoch=2)
    assert replicas.append("t", 0, batch(2), 1, 0).base_offset == 2
    assert replicas.append("t", 0, batch(4), 1, 0).base_offset == 4
    log.truncate_to(4)
    replicas.on_log_truncated("t", 0)
    assert replicas.append("t", 0, batch(2), 1, 0).base_offset == 2  # still a duplicate
    assert replicas.append("t", 0, batch(4), 1, 0).base_offset == 4  # appended again
    assert log.log_end_offset == 6


def test_snapshots_are_written_at_checkpoints_and_loaded_on_restart(tmp_path):
    replicas = leader(tmp_path)
    replicas.append("t", 0, batch(0), 1, 0)
    replicas.checkpoint_producer_states()
    replicas.log_manager.close()
    assert [p.name for p in (tmp_path / "t-0").glob("*.snapshot")] == [
        "00000000000000000002.snapshot"
    ]
    again = leader(tmp_path)
    assert again.producer_state("t", 0).snapshot_offset == 2
    assert again.append("t", 0, batch(0), 1, 0).base_offset == 0
