"""FindCoordinator 0-3: the group handler's (group or transaction coordinator), the
coordinator's address given on the listener the request came in on."""

from __future__ import annotations

from broker.handlers.group_messages import FindCoordinatorRequest
from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode

API_KEY = 10
ORDERED = False


async def handle(ctx, request, started):
    r = await ctx.backend.find_coordinator(
        FindCoordinatorRequest(request.key, getattr(request, "key_type", 0)), ctx.who
    )
    code, message, node_id, host, port = (r.error_code, r.error_message, r.node_id, r.host, r.port)
    if code == 0:
        endpoint = ctx.backend.endpoint(node_id, ctx.listener)
        if endpoint is None:
            code, message, node_id, host, port = (
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"the coordinator, broker {node_id}, has no {ctx.listener} listener",
                -1,
                "",
                -1,
            )
        else:
            host, port = endpoint
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "error_code": code,
                "error_message": message or None,
                "node_id": node_id,
                "host": host,
                "port": port,
            },
        )
    )
