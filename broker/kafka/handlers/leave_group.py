"""LeaveGroup 0-4: the gRPC call; v0-2 name one member, v3+ a batch (KIP-345)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 13
ORDERED = False


async def handle(ctx, request, started):
    if ctx.version < 3:
        members = [gpb.MemberIdentity(member_id=request.member_id)]
    else:
        members = []
        for m in request.members:
            identity = gpb.MemberIdentity(member_id=m.member_id)
            if m.group_instance_id is not None:
                identity.group_instance_id = m.group_instance_id
            members.append(identity)
    r = await ctx.backend.leave_group(gpb.LeaveGroupRequest(group_id=request.group_id,
                                                            members=members))
    code = r.error_code
    if ctx.version < 3 and code == 0 and r.members:
        code = r.members[0].error_code       # one member: its error is the answer's
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0, "error_code": code,
        "members": [{"member_id": m.member_id,
                     "group_instance_id": m.group_instance_id if m.HasField("group_instance_id")
                     else None, "error_code": m.error_code} for m in r.members]}))
