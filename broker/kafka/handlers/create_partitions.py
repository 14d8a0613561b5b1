"""CreatePartitions 0-3: the admin handler's (a topic grows to `count` partitions, placed by
kraft: a manual assignment is refused)."""

from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode
from kraft.controller import messages as c

API_KEY = 37
ORDERED = False


async def handle(ctx, request, started):
    manual = {t.name for t in request.topics if t.assignments}
    asked = tuple(
        c.CreatePartitionsTopic(t.name, t.count) for t in request.topics if t.name not in manual
    )
    results = {}
    if asked:
        r = await ctx.backend.admin(
            c.CreatePartitionsRequest(asked, validate_only=request.validate_only), ctx.who
        )
        results = {t.name: t for t in r.topics}
        if r.error_code:  # NOT_CONTROLLER and the like: every topic's answer
            results = {
                t.name: c.CreatePartitionsResult(t.name, r.error_code, r.error_message)
                for t in asked
            }
    out = []
    for t in request.topics:
        if t.name in manual:
            result = c.CreatePartitionsResult(
                t.name,
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "kraft places replicas itself: give the count without assignments",
            )
        else:
            result = results.get(t.name) or c.CreatePartitionsResult(
                t.name, ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for this topic"
            )
        out.append(
            {
                "name": t.name,
                "error_code": result.error_code,
                "error_message": result.error_message or None,
            }
        )
    return Answer.of(
        codec.encode_response(API_KEY, ctx.version, {"throttle_time": 0, "results": out})
    )
