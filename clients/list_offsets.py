"""ListOffsets for many partitions at once: one request per leader, as the consumer and the
admin client both need (positions from timestamps, earliest/latest offsets); `list_offsets_until`
retries through a leader change."""

from __future__ import annotations

import trio

from clients import bridge
from clients.cluster import Cluster
from clients.errors import INVALID_METADATA, ErrorCode, KraftError
from clients.types import TopicPartition
from clients.wire import broker_pb2


async def list_offsets(
    cluster: Cluster, wanted: dict, isolation_level: int = 0
) -> dict[TopicPartition, tuple[int, int]]:
    """{tp: timestamp} -> {tp: (offset, timestamp)}, asking each partition's leader; -1 and -2
    ask for the latest and earliest offsets (latest: the last stable offset with
    `isolation_level` 1, read_committed). Raises KraftError for the first failing partition
    (and forgets its leader when the answer says the cached one is stale)."""
    md = cluster.metadata
    if any(tp not in md.leaders for tp in wanted):
        await cluster.refresh(sorted({tp[0] for tp in wanted}))
    by_node: dict[int, dict] = {}
    for tp, ts in wanted.items():
        node = md.leaders.get(tp)
        if node is None:
            state = md.topics.get(tp[0])
            code = (
                state.error_code
                if state and state.error_code
                else (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if state is None or tp[1] not in state.partitions
                    else ErrorCode.LEADER_NOT_AVAILABLE
                )
            )
            raise KraftError(code, f"no leader for {tp[0]}-{tp[1]}")
        by_node.setdefault(node, {}).setdefault(tp[0], []).append(
            broker_pb2.ListOffsetsPartition(partition=tp[1], current_leader_epoch=-1, timestamp=ts)
        )
    out = {}
    for node, topics in by_node.items():
        req = broker_pb2.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[broker_pb2.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        try:
            resp = await bridge.call(cluster.broker_stub(node).ListOffsets, req, cluster.timeout)
        except KraftError as exc:
            # A leader that cannot be reached (killed, not fenced yet) must not be asked again
            # and again: forgetting it makes the next try ask for fresh metadata first.
            if exc.code in INVALID_METADATA or exc.code == ErrorCode.BROKER_NOT_AVAILABLE:
                for t, ps in topics.items():
                    for p in ps:
                        md.invalidate_leader((t, p.partition))
            raise
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition)
                if p.error_code:
                    if p.error_code in INVALID_METADATA:
                        md.invalidate_leader(tp)
                    raise KraftError(p.error_code, f"{t.name}-{p.partition}: {p.error_message}")
                out[tp] = (p.offset, p.timestamp)
    return out


async def list_offsets_until(
    cluster: Cluster,
    wanted: dict,
    timeout_s: float,
    backoff_s: float = 0.1,
    isolation_level: int = 0,
) -> dict[TopicPartition, tuple[int, int]]:
    """`list_offsets`, retried on retriable errors (with fresh metadata, backoff doubling up to
    1 s) for up to `timeout_s`, as Kafka's consumer does for default.api.timeout.ms: a new
    leader is usually elected within seconds of the old one dying."""
    deadline = trio.current_time() + timeout_s
    while True:
        try:
            return await list_offsets(cluster, wanted, isolation_level)
        except KraftError as exc:
            if not exc.retriable or trio.current_time() + backoff_s >= deadline:
                raise
        await trio.sleep(backoff_s)
        backoff_s = min(1.0, backoff_s * 2)
