"""CreateTopics 2-7: the admin handler's (forwarded to the active controller, answered once
this broker's image has the topics). Manual replica assignments are not taken."""

from __future__ import annotations

import uuid

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode
from kraft.controller import messages as c

API_KEY = 19
ORDERED = False


async def handle(ctx, request, started):
    manual = {t.name for t in request.topics if t.assignments}
    asked = [
        c.CreatableTopic(
            t.name,
            t.num_partitions,
            t.replication_factor,
            {x.name: x.value for x in t.configs if x.value is not None},
        )
        for t in request.topics
        if t.name not in manual
    ]
    results = {}
    if asked:
        r = await ctx.backend.admin(
            c.CreateTopicsRequest(
                tuple(asked), validate_only=getattr(request, "validate_only", False)
            ),
            ctx.who,
        )
        results = {t.name: t for t in r.topics}
        if r.error_code:  # NOT_CONTROLLER and the like: every topic's answer
            results = {
                t.name: c.CreateTopicResult(t.name, r.error_code, r.error_message) for t in asked
            }
    topics = []
    for t in request.topics:
        if t.name in manual:
            result = c.CreateTopicResult(
                t.name,
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "kraft places replicas itself: give num_partitions "
                "and replication_factor instead of assignments",
            )
        else:
            result = results.get(t.name) or c.CreateTopicResult(
                t.name, ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for this topic"
            )
        topics.append(
            {
                "name": t.name,
                "error_code": result.error_code,
                "error_message": result.error_message or None,
                "topic_id": uuid.UUID(result.topic_id) if result.topic_id else None,
                "num_partitions": result.num_partitions,
                "replication_factor": result.replication_factor,
                "configs": [
                    {
                        "name": k,
                        "value": v,
                        "read_only": False,
                        "config_source": 1,
                        "is_sensitive": False,
                    }
                    for k, v in result.configs.items()
                ],
            }
        )
    return Answer.of(
        codec.encode_response(API_KEY, ctx.version, {"throttle_time": 0, "topics": topics})
    )
