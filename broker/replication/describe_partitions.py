"""DescribePartitions at the wire edge: what the replicas this broker hosts know of their own
replication (role, epochs, high watermark, offsets; on a leader, the ISR and each replica's end)."""

from __future__ import annotations

from broker.replication.partition import Partition
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.wire import broker_pb2 as pb


def describe_partitions(
    replicas: ReplicaManager, request: pb.DescribePartitionsRequest
) -> pb.DescribePartitionsResponse:
    wanted = [(t.topic, p) for t in request.topics for p in t.partitions]
    if not request.topics:
        wanted = sorted((h.topic, h.partition) for h in replicas.partitions())
    answers = []
    for topic, partition in wanted:
        hosted = replicas.get(topic, partition)
        if hosted is None:
            answers.append(
                pb.PartitionReplicationState(
                    topic=topic,
                    partition=partition,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=f"broker {replicas.node_id} hosts no replica of {topic}-{partition}",
                    leader=-1,
                    leader_epoch=-1,
                    high_watermark=-1,
                    log_end_offset=-1,
                    log_start_offset=-1,
                )
            )
        else:
            answers.append(_state(hosted, replicas.node_id))
    return pb.DescribePartitionsResponse(partitions=answers)


def _state(hosted: Partition, node_id: int) -> pb.PartitionReplicationState:
    state, log = hosted.state, hosted.log
    answer = pb.PartitionReplicationState(
        topic=hosted.topic,
        partition=hosted.partition,
        role=state.role,
        leader=hosted.leader_id,
        leader_epoch=hosted.leader_epoch,
        high_watermark=log.high_watermark,
        log_end_offset=log.log_end_offset,
        log_start_offset=log.log_start_offset,
    )
    if hosted.is_leader:
        answer.isr.extend(state.isr)
        for replica in state.replicas:
            follower = state.follower_state(replica)
            end = (
                log.log_end_offset
                if replica == node_id
                else (follower.log_end_offset if follower is not None else -1)
            )
            answer.replicas.append(pb.ReplicaLag(replica_id=replica, log_end_offset=end))
    return answer
