"""AddPartitionsToTxn 0-3: the transaction handler's (the coordinator adds the partitions to
the producer's ongoing transaction)."""

from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from broker.transaction import messages as m
from clients.types import TopicPartition

API_KEY = 24
ORDERED = False


async def handle(ctx, request, started):
    topics = request.v3_and_below_topics
    asked = [(t.name, p) for t in topics for p in t.partitions]
    r = await ctx.backend.add_partitions_to_txn(
        m.AddPartitionsRequest(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            frozenset(TopicPartition(t, p) for t, p in asked),
        ),
        ctx.who,
    )
    codes = {(p.topic, p.partition): p.error_code for p in r.partitions}
    by_topic: dict[str, list] = {}
    for topic, partition in asked:
        # A whole-request error (NOT_COORDINATOR...) is every partition's in Kafka's answer.
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_error_code": r.error_code or codes.get((topic, partition), 0),
            }
        )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {"name": t, "results_by_partition": parts} for t, parts in by_topic.items()
                ],
            },
        )
    )
