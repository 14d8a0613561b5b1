"""Heartbeat 0-4: the gRPC call."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 12
ORDERED = False


async def handle(ctx, request, started):
    grpc_request = gpb.HeartbeatRequest(group_id=request.group_id,
                                        generation_id=request.generation_id,
                                        member_id=request.member_id)
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        grpc_request.group_instance_id = instance
    r = await ctx.backend.heartbeat(grpc_request)
    return Answer.of(codec.encode_response(API_KEY, ctx.version,
                                           {"throttle_time": 0, "error_code": r.error_code}))
