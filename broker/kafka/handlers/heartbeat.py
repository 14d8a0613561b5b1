"""Heartbeat 0-4: the group handler's."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 12
ORDERED = False


async def handle(ctx, request, started):
    r = ctx.backend.heartbeat(
        m.HeartbeatRequest(
            request.group_id,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(API_KEY, ctx.version, {"throttle_time": 0, "error_code": r.error})
    )
