"""FindCoordinator 0-3: the gRPC call (group or transaction coordinator), the coordinator's
address given on the listener the request came in on."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode
from clients.wire import group_pb2 as gpb

API_KEY = 10
ORDERED = False


async def handle(ctx, request, started):
    response = await ctx.backend.find_coordinator(gpb.FindCoordinatorRequest(
        key=request.key, key_type=getattr(request, "key_type", 0)))
    code, message, node_id, host, port = (response.error_code, response.error_message,
                                          response.node_id, response.host, response.port)
    if code == 0:
        endpoint = ctx.backend.endpoint(node_id, ctx.listener)
        if endpoint is None:
            code, message, node_id, host, port = (
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"the coordinator, broker {node_id}, has no {ctx.listener} listener", -1, "", -1)
        else:
            host, port = endpoint
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0, "error_code": code, "error_message": message or None,
        "node_id": node_id, "host": host, "port": port}))
