"""DeleteTopics 1-6: the admin handler's (forwarded to the active controller); v6 may name a
topic by id."""

from __future__ import annotations

import uuid

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode
from kraft.controller import messages as c

API_KEY = 20
ORDERED = False


async def handle(ctx, request, started):
    if ctx.version >= 6:
        asked = [
            (t.name if t.name is not None else ctx.backend.topic_name(t.topic_id), t.topic_id)
            for t in request.topics
        ]
    else:
        asked = [(name, None) for name in request.topic_names]
    names = tuple(n for n, _ in asked if n is not None)
    results = {}
    if names:
        r = await ctx.backend.admin(c.DeleteTopicsRequest(names), ctx.who)
        results = {t.name: t for t in r.topics}
        if r.error_code:
            results = {n: c.DeleteTopicResult(n, r.error_code, r.error_message) for n in names}
    out = []
    for name, topic_id in asked:
        if name is None:
            out.append(
                {
                    "name": None,
                    "topic_id": topic_id,
                    "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                    "error_message": f"no topic has id {topic_id}",
                }
            )
            continue
        result = results.get(name) or c.DeleteTopicResult(
            name, ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for this topic"
        )
        out.append(
            {
                "name": name,
                "error_code": result.error_code,
                "error_message": result.error_message or None,
                "topic_id": uuid.UUID(result.topic_id)
                if result.topic_id
                else (topic_id or uuid.UUID(int=0)),
            }
        )
    return Answer.of(
        codec.encode_response(API_KEY, ctx.version, {"throttle_time": 0, "responses": out})
    )
