"""Metadata 0-12: the Metadata handler (auto-creation, Describe authorization, each broker's
endpoint on the listener the request came in on) in Kafka's answer of the asked version."""

from __future__ import annotations

import uuid

from broker.handlers.metadata import MetadataRequest
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode

API_KEY = 3
ORDERED = False
NO_OPERATIONS = -(2**31)  # Kafka's "authorized operations not asked for"


def topic_uuid(topic_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(topic_id)
    except ValueError:
        return None


async def handle(ctx, request, started):
    version = ctx.version
    by_id = []  # v10+: topics named by id only
    if request.topics is None or (version == 0 and not request.topics):
        names, all_topics = [], True  # v0: an empty list means every topic
    else:
        all_topics = False
        names = []
        for t in request.topics:
            if t.name is not None:
                names.append(t.name)
            else:
                name = ctx.backend.topic_name(getattr(t, "topic_id", None))
                (names.append(name) if name is not None else by_id.append(t.topic_id))
    auto_create = request.allow_auto_topic_creation if version >= 4 else True
    response = await ctx.backend.metadata(
        MetadataRequest(
            topics=tuple(names), all_topics=all_topics, allow_auto_topic_creation=auto_create
        ),
        ctx.who,
    )
    # v1+: an empty list asks for no topic (the handler takes it as every topic).
    answered = response.topics if all_topics else [t for t in response.topics if t.name in names]
    topics = [
        {
            "error_code": t.error_code,
            "name": t.name,
            "topic_id": topic_uuid(t.topic_id),
            "is_internal": t.is_internal,
            "topic_authorized_operations": NO_OPERATIONS,
            "partitions": [
                {
                    "error_code": p.error_code,
                    "partition_index": p.partition,
                    "leader_id": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "replica_nodes": list(p.replicas),
                    "isr_nodes": list(p.isr),
                    "offline_replicas": list(p.offline_replicas),
                }
                for p in t.partitions
            ],
        }
        for t in answered
    ]
    topics += [
        {
            "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
            "name": None,
            "topic_id": tid,
            "partitions": [],
            "topic_authorized_operations": NO_OPERATIONS,
        }
        for tid in by_id
    ]
    return Answer.of(
        codec.encode_response(
            API_KEY,
            version,
            {
                "throttle_time": 0,
                "brokers": [
                    {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack or None}
                    for b in response.brokers
                ],
                "cluster_id": response.cluster_id,
                "controller_id": response.controller_id,
                "topics": topics,
            },
        )
    )
