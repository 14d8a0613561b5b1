"""DescribePartitions answers from the replicas a broker hosts: a leader gives its high watermark,
offsets, ISR and each replica's log end as of its last fetch; a follower its own view; a partition
not hosted here an error naming it."""

from __future__ import annotations

from broker.replication.describe_partitions import describe_partitions
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration


def hosting(tmp_path, node_id: int, leader: int) -> ReplicaManager:
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=node_id)
    reg = PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=leader, leader_epoch=4, partition_epoch=4
    )
    replicas.apply_registration("t", 0, "topic-id", LogConfig(), reg, now_ms=0)
    return replicas


def ask(replicas: ReplicaManager, *pairs) -> list:
    request = pb.DescribePartitionsRequest(
        topics=[pb.TopicPartitions(topic=t, partitions=[p]) for t, p in pairs]
    )
    return list(describe_partitions(replicas, request).partitions)


def test_the_leader_reports_high_watermark_isr_and_each_replica_log_end(tmp_path):
    replicas = hosting(tmp_path, node_id=1, leader=1)
    assert replicas.append("t", 0, encode_batch([(None, b"v", (), 1)] * 5), 1, 0).error_code == 0
    replicas.read_for_follower("t", 0, 2, 5, 4, 4, 1 << 20, now_ms=1)  # replica 2 has all 5
    replicas.read_for_follower("t", 0, 3, 3, 4, 4, 1 << 20, now_ms=1)  # replica 3 has 3
    [state] = ask(replicas, ("t", 0))
    assert (state.error_code, state.role, state.leader, state.leader_epoch) == (0, "leader", 1, 4)
    assert (state.high_watermark, state.log_end_offset, state.log_start_offset) == (3, 5, 0)
    assert list(state.isr) == [1, 2, 3]
    assert {r.replica_id: r.log_end_offset for r in state.replicas} == {1: 5, 2: 5, 3: 3}


def test_a_replica_that_has_not_fetched_in_this_epoch_is_unknown(tmp_path):
    [state] = ask(hosting(tmp_path, node_id=1, leader=1), ("t", 0))
    assert {r.replica_id: r.log_end_offset for r in state.replicas} == {1: 0, 2: -1, 3: -1}


def test_a_follower_reports_its_own_view_without_isr(tmp_path):
    [state] = ask(hosting(tmp_path, node_id=2, leader=1), ("t", 0))
    assert (state.role, state.leader, state.leader_epoch) == ("follower", 1, 4)
    assert list(state.isr) == [] and list(state.replicas) == []


def test_an_empty_request_covers_every_hosted_partition_and_strangers_are_errors(tmp_path):
    replicas = hosting(tmp_path, node_id=1, leader=1)
    assert [(s.topic, s.partition) for s in ask(replicas)] == [("t", 0)]
    [missing] = ask(replicas, ("t", 7))
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "t-7" in missing.error_message and missing.high_watermark == -1
