"""DescribeGroups 0-5: the group handler's (state, protocol, members with their metadata and
assignment)."""

from __future__ import annotations

from broker.handlers import group_messages as g
from broker.kafka import codec
from broker.kafka.answer import Answer
from broker.kafka.handlers.metadata import NO_OPERATIONS

API_KEY = 15
ORDERED = False


async def handle(ctx, request, started):
    r = ctx.backend.describe_groups(g.DescribeGroupsRequest(tuple(request.groups)), ctx.who)
    groups = []
    for d in r.groups:
        group = d.group
        groups.append(
            {
                "error_code": d.error_code,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": group.protocol_type if group else "",
                "protocol_data": group.protocol if group else "",
                "authorized_operations": NO_OPERATIONS,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in (group.members if group else ())
                ],
            }
        )
    return Answer.of(
        codec.encode_response(API_KEY, ctx.version, {"throttle_time": 0, "groups": groups})
    )
