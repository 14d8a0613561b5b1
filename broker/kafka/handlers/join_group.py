"""JoinGroup 0-7: the gRPC call; v4+ with the MEMBER_ID_REQUIRED round (KIP-394), v0-3
without (those clients know no such round)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 11
ORDERED = False


def ms(value) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


async def handle(ctx, request, started):
    version = ctx.version
    # v0 has no rebalance timeout: Kafka takes the session timeout for it.
    rebalance = getattr(request, "rebalance_timeout", request.session_timeout)
    grpc_request = gpb.JoinGroupRequest(
        group_id=request.group_id, member_id=request.member_id,
        protocol_type=request.protocol_type, session_timeout_ms=ms(request.session_timeout),
        rebalance_timeout_ms=ms(rebalance), client_id=ctx.header.client_id or "",
        protocols=[gpb.Protocol(name=p.name, metadata=p.metadata) for p in request.protocols])
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        grpc_request.group_instance_id = instance
    r = await ctx.backend.join_group(grpc_request, require_known_member_id=version >= 4)
    return Answer.of(codec.encode_response(API_KEY, version, {
        "throttle_time": 0, "error_code": r.error_code, "generation_id": r.generation_id,
        "protocol_type": r.protocol_type or None, "protocol_name": r.protocol_name or None,
        "leader": r.leader, "member_id": r.member_id,
        "members": [{"member_id": m.member_id,
                     "group_instance_id": m.group_instance_id if m.HasField("group_instance_id")
                     else None, "metadata": m.metadata} for m in r.members]}))
