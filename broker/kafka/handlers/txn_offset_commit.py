"""TxnOffsetCommit 0-3: the group handler's (offsets written inside the producer's transaction,
applied at its COMMIT marker); run whole before the next request is read, as OffsetCommit."""

from __future__ import annotations

from broker.group import messages as m
from broker.kafka.handlers.committed_offsets import answer, offsets_of

API_KEY = 28
ORDERED = True


async def handle(ctx, request, started):
    r = await ctx.backend.txn_offset_commit(
        m.TxnOffsetCommitRequest(
            request.group_id,
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            offsets_of(request),
            getattr(request, "generation_id", -1),
            getattr(request, "member_id", "") or "",
            getattr(request, "group_instance_id", None),
        ),
        ctx.who,
    )
    return answer(API_KEY, ctx.version, request, r)
