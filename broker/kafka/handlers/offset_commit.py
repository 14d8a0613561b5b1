"""OffsetCommit 2-8: the group handler's; run whole before the next request is read, so a
connection's commits are stored in the order sent."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka.handlers.committed_offsets import answer, offsets_of

API_KEY = 8
ORDERED = True


async def handle(ctx, request, started):
    generation = getattr(
        request, "generation_id_or_member_epoch", getattr(request, "generation_id", -1)
    )
    r = await ctx.backend.offset_commit(
        m.OffsetCommitRequest(
            request.group_id,
            offsets_of(request),
            generation,
            request.member_id,
            getattr(request, "group_instance_id", None),
        ),
        ctx.who,
    )
    return answer(API_KEY, ctx.version, request, r)
