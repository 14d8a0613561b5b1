"""JoinGroup 0-7: the group handler's; v4+ with the MEMBER_ID_REQUIRED round (KIP-394), v0-3
without (those clients know no such round)."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 11
ORDERED = False


def ms(value) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


async def handle(ctx, request, started):
    version = ctx.version
    # v0 has no rebalance timeout: Kafka takes the session timeout for it.
    rebalance = getattr(request, "rebalance_timeout", request.session_timeout)
    r = await ctx.backend.join_group(
        m.JoinGroupRequest(
            request.group_id,
            request.member_id,
            request.protocol_type,
            tuple((p.name, p.metadata) for p in request.protocols),
            ms(request.session_timeout),
            ms(rebalance),
            getattr(request, "group_instance_id", None),
            client_id=ctx.header.client_id or "",
            client_host=ctx.peer,
            require_known_member_id=version >= 4,
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            version,
            {
                "throttle_time": 0,
                "error_code": r.error,
                "generation_id": r.generation_id,
                "protocol_type": r.protocol_type,
                "protocol_name": r.protocol_name,
                "leader": r.leader,
                "member_id": r.member_id,
                "members": [
                    {
                        "member_id": j.member_id,
                        "group_instance_id": j.group_instance_id,
                        "metadata": j.metadata,
                    }
                    for j in r.members
                ],
            },
        )
    )
