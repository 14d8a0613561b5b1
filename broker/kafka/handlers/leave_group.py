"""LeaveGroup 0-4: the group handler's; v0-2 name one member, v3+ a batch (KIP-345)."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 13
ORDERED = False


async def handle(ctx, request, started):
    if ctx.version < 3:
        members = (m.MemberIdentity(request.member_id),)
    else:
        members = tuple(m.MemberIdentity(i.member_id, i.group_instance_id) for i in request.members)
    r = await ctx.backend.leave_group(m.LeaveGroupRequest(request.group_id, members), ctx.who)
    code = r.error
    if ctx.version < 3 and code == 0 and r.members:
        code = r.members[0][1]  # one member: its error is the answer's
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "error_code": code,
                "members": [
                    {
                        "member_id": identity.member_id,
                        "group_instance_id": identity.group_instance_id,
                        "error_code": c,
                    }
                    for identity, c in r.members
                ],
            },
        )
    )
