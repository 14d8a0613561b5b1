"""OffsetFetch 1-8: the group handler's, for each group asked (v8 asks for several at once)."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.types import TopicPartition

API_KEY = 9
ORDERED = False


def _group(ctx, group_id: str, topics, require_stable: bool) -> dict:
    partitions = (
        None
        if topics is None
        else tuple(TopicPartition(t.name, p) for t in topics for p in t.partition_indexes)
    )
    r = ctx.backend.offset_fetch(
        m.OffsetFetchRequest(group_id, partitions, require_stable), ctx.who
    )
    by_topic: dict[str, list] = {}
    for p in r.partitions:
        by_topic.setdefault(p.topic, []).append(
            {
                "partition_index": p.partition,
                "committed_offset": p.offset,
                "committed_leader_epoch": p.leader_epoch,
                "metadata": p.metadata,
                "error_code": p.error_code or r.error_code,
            }
        )
    if r.error_code and partitions and not r.partitions:
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": r.error_code,
                }
            )
    return {
        "group_id": group_id,
        "error_code": r.error_code,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }


async def handle(ctx, request, started):
    version = ctx.version
    stable = getattr(request, "require_stable", False)
    if version >= 8:
        body = {
            "throttle_time": 0,
            "groups": [_group(ctx, g.group_id, g.topics, stable) for g in request.groups],
        }
    else:
        group = _group(ctx, request.group_id, request.topics, stable)
        body = {"throttle_time": 0, "error_code": group["error_code"], "topics": group["topics"]}
    return Answer.of(codec.encode_response(API_KEY, version, body))
