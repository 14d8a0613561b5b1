"""ListGroups 0-4: the group handler's (the groups this broker coordinates: an admin client
asks every broker), v4 with a state filter."""

from __future__ import annotations

from broker.handlers import group_messages as g
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 16
ORDERED = False


async def handle(ctx, request, started):
    r = ctx.backend.list_groups(
        g.ListGroupsRequest(tuple(getattr(request, "states_filter", ()) or ())), ctx.who
    )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "error_code": r.error_code,
                "groups": [
                    {
                        "group_id": x.group_id,
                        "protocol_type": x.protocol_type,
                        "group_state": x.state,
                    }
                    for x in r.groups
                ],
            },
        )
    )
