"""TxnOffsetCommit 0-3: the group handler's (offsets written inside the producer's transaction,
applied at its COMMIT marker); run whole before the next request is read, as OffsetCommit."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.types import TopicPartition

API_KEY = 28
ORDERED = True


async def handle(ctx, request, started):
    r = await ctx.backend.txn_offset_commit(
        m.TxnOffsetCommitRequest(
            request.group_id,
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            {
                TopicPartition(t.name, p.partition_index): m.OffsetAndMetadata(
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata or "",
                )
                for t in request.topics
                for p in t.partitions
            },
            getattr(request, "generation_id", -1),
            getattr(request, "member_id", "") or "",
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
