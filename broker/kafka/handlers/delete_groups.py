"""DeleteGroups 0-2: the group handler's (an empty group's offsets and metadata go)."""

from __future__ import annotations

from broker.handlers import group_messages as g
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 42
ORDERED = False


async def handle(ctx, request, started):
    r = await ctx.backend.delete_groups(g.DeleteGroupsRequest(tuple(request.groups_names)), ctx.who)
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "results": [{"group_id": x.group_id, "error_code": x.error_code} for x in r.groups],
            },
        )
    )
