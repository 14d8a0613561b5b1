"""OffsetCommit 2-8: the group handler's; run whole before the next request is read, so a
connection's commits are stored in the order sent."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.types import TopicPartition

API_KEY = 8
ORDERED = True


async def handle(ctx, request, started):
    generation = getattr(
        request, "generation_id_or_member_epoch", getattr(request, "generation_id", -1)
    )
    r = await ctx.backend.offset_commit(
        m.OffsetCommitRequest(
            request.group_id,
            {
                TopicPartition(t.name, p.partition_index): m.OffsetAndMetadata(
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata or "",
                )
                for t in request.topics
                for p in t.partitions
            },
            generation,
            request.member_id,
            getattr(request, "group_instance_id", None),
        ),
        ctx.who,
    )
    errors = {(p.topic, p.partition): p.error_code for p in r.partitions}
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                # A whole-request error (NOT_COORDINATOR...) is every partition's in Kafka's answer.
                                "error_code": r.error_code
                                or errors.get((t.name, p.partition_index), 0),
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in request.topics
                ],
            },
        )
    )
