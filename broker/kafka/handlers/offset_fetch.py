"""OffsetFetch 1-8: the gRPC call for each group asked (v8 asks for several at once)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 9
ORDERED = False


async def _group(ctx, group_id: str, topics, require_stable: bool) -> dict:
    r = await ctx.backend.offset_fetch(gpb.OffsetFetchRequest(
        group_id=group_id, all_partitions=topics is None, require_stable=require_stable,
        partitions=[gpb.TopicPartitionRef(topic=t.name, partition=p)
                    for t in topics or () for p in t.partition_indexes]))
    by_topic: dict[str, list] = {}
    for p in r.partitions:
        by_topic.setdefault(p.topic, []).append({
            "partition_index": p.partition, "committed_offset": p.offset,
            "committed_leader_epoch": p.leader_epoch, "metadata": p.metadata,
            "error_code": p.error_code or r.error_code})
    if r.error_code and topics is not None and not r.partitions:
        by_topic = {t.name: [{"partition_index": p, "committed_offset": -1,
                              "committed_leader_epoch": -1, "metadata": "",
                              "error_code": r.error_code} for p in t.partition_indexes]
                    for t in topics}
    return {"group_id": group_id, "error_code": r.error_code,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}


async def handle(ctx, request, started):
    version = ctx.version
    stable = getattr(request, "require_stable", False)
    if version >= 8:
        groups = [await _group(ctx, g.group_id, g.topics, stable) for g in request.groups]
        body = {"throttle_time": 0, "groups": groups}
    else:
        group = await _group(ctx, request.group_id, request.topics, stable)
        body = {"throttle_time": 0, "error_code": group["error_code"], "topics": group["topics"]}
    return Answer.of(codec.encode_response(API_KEY, version, body))
