"""SyncGroup 0-5: the gRPC call (parked until the leader's assignment is stored)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 14
ORDERED = False


async def handle(ctx, request, started):
    grpc_request = gpb.SyncGroupRequest(
        group_id=request.group_id, generation_id=request.generation_id,
        member_id=request.member_id,
        protocol_type=getattr(request, "protocol_type", None) or "",
        protocol_name=getattr(request, "protocol_name", None) or "",
        assignments=[gpb.MemberAssignment(member_id=a.member_id, assignment=a.assignment)
                     for a in request.assignments])
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        grpc_request.group_instance_id = instance
    r = await ctx.backend.sync_group(grpc_request)
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0, "error_code": r.error_code,
        "protocol_type": r.protocol_type or None, "protocol_name": r.protocol_name or None,
        "assignment": r.assignment}))
