"""SyncGroup 0-5: the group handler's (parked until the leader's assignment is stored)."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 14
ORDERED = False


async def handle(ctx, request, started):
    r = await ctx.backend.sync_group(
        m.SyncGroupRequest(
            request.group_id,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            getattr(request, "protocol_type", None),
            getattr(request, "protocol_name", None),
            {a.member_id: a.assignment for a in request.assignments},
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "error_code": r.error,
                "protocol_type": r.protocol_type,
                "protocol_name": r.protocol_name,
                "assignment": r.assignment,
            },
        )
    )
