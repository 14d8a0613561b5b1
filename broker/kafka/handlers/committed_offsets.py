"""What OffsetCommit and TxnOffsetCommit share on the Kafka wire: the offsets a request names,
as the group handler takes them, and the per-partition answer both APIs send back."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.types import TopicPartition


def offsets_of(request) -> dict[TopicPartition, m.OffsetAndMetadata]:
    return {
        TopicPartition(t.name, p.partition_index): m.OffsetAndMetadata(
            p.committed_offset,
            getattr(p, "committed_leader_epoch", -1),
            p.committed_metadata or "",
        )
        for t in request.topics
        for p in t.partitions
    }


def answer(api_key: int, version: int, request, response) -> Answer:
    """Every partition the request named, in its order; a whole-request error (NOT_COORDINATOR,
    ...) is every partition's, as in Kafka's answer."""
    errors = {(p.topic, p.partition): p.error_code for p in response.partitions}
    return Answer.of(
        codec.encode_response(
            api_key,
            version,
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                "error_code": response.error_code
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
