"""DescribePartitions for many partitions at once: one request per leader, since only a partition's
leader knows its high watermark and how far each replica has fetched (the admin's view of lag)."""

from __future__ import annotations

from dataclasses import dataclass, field

from clients import bridge
from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError
from clients.types import TopicPartition
from clients.wire import broker_pb2


@dataclass
class PartitionReplication:
    """One partition as a broker hosting it sees it (the leader, unless `role` says otherwise);
    offsets are -1 and `error_code` set when no broker could tell."""

    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""
    role: str = ""
    leader: int = -1
    leader_epoch: int = -1
    high_watermark: int = -1
    log_end_offset: int = -1
    log_start_offset: int = -1
    isr: list[int] = field(default_factory=list)
    # replica id -> log end offset as of its last fetch; replicas not heard from are left out.
    replica_log_end_offsets: dict[int, int] = field(default_factory=dict)


def _failed(tp: TopicPartition, code: int, message: str) -> PartitionReplication:
    return PartitionReplication(tp.topic, tp.partition, code, message)


def _from_pb(p: broker_pb2.PartitionReplicationState) -> PartitionReplication:
    return PartitionReplication(
        p.topic,
        p.partition,
        p.error_code,
        p.error_message,
        p.role,
        p.leader,
        p.leader_epoch,
        p.high_watermark,
        p.log_end_offset,
        p.log_start_offset,
        list(p.isr),
        {r.replica_id: r.log_end_offset for r in p.replicas if r.log_end_offset >= 0},
    )


async def _ask(
    cluster: Cluster, node: int, tps: list[TopicPartition]
) -> dict[TopicPartition, PartitionReplication]:
    topics: dict[str, list[int]] = {}
    for tp in tps:
        topics.setdefault(tp.topic, []).append(tp.partition)
    request = broker_pb2.DescribePartitionsRequest(
        topics=[broker_pb2.TopicPartitions(topic=t, partitions=ps) for t, ps in topics.items()]
    )
    try:
        resp = await bridge.call(
            cluster.broker_stub(node).DescribePartitions, request, cluster.timeout
        )
    except KraftError as exc:
        return {tp: _failed(tp, exc.code, f"broker {node}: {exc.message}") for tp in tps}
    answers = {TopicPartition(p.topic, p.partition): _from_pb(p) for p in resp.partitions}
    return {
        tp: answers.get(tp)
        or _failed(
            tp, ErrorCode.UNKNOWN_SERVER_ERROR, f"broker {node} did not answer for {tp[0]}-{tp[1]}"
        )
        for tp in tps
    }


def _keep(out: dict, tp: TopicPartition, answer: PartitionReplication) -> None:
    # A retry that fails must not replace what an earlier answer did tell (a follower's view).
    old = out.get(tp)
    if old is None or old.error_code or not answer.error_code:
        out[tp] = answer


async def describe_partitions(
    cluster: Cluster, tps: list
) -> dict[TopicPartition, PartitionReplication]:
    """{tp: PartitionReplication} from each partition's leader. A partition whose leader cannot
    be reached, or no longer leads, is asked again once after a metadata refresh; what is still
    missing then comes back with its error (never raised: one dead leader must not hide the rest)."""
    md = cluster.metadata
    pending = list(dict.fromkeys(TopicPartition(*tp) for tp in tps))
    out: dict[TopicPartition, PartitionReplication] = {}
    for last_try in (False, True):
        if last_try or any(tp not in md.leaders for tp in pending):
            await cluster.refresh(sorted({tp.topic for tp in pending}))
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in pending:
            node = md.leaders.get(tp)
            if node is None:
                _keep(
                    out,
                    tp,
                    _failed(
                        tp,
                        ErrorCode.LEADER_NOT_AVAILABLE,
                        f"{tp.topic}-{tp.partition} has no leader right now",
                    ),
                )
            else:
                by_node.setdefault(node, []).append(tp)
        retry = []
        for node, group in by_node.items():
            for tp, answer in (await _ask(cluster, node, group)).items():
                _keep(out, tp, answer)
                if answer.error_code or answer.role != "leader":
                    retry.append(tp)
        pending = retry
        if not pending:
            break
    return {tp: out[tp] for tp in dict.fromkeys(TopicPartition(*tp) for tp in tps)}
