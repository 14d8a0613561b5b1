"""AddOffsetsToTxn 0-3: the transaction handler's (a group's offsets join the transaction)."""

from __future__ import annotations

from broker.handlers.transaction import AddOffsetsToTxnRequest
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 25
ORDERED = False


async def handle(ctx, request, started):
    r = await ctx.backend.add_offsets_to_txn(
        AddOffsetsToTxnRequest(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY, ctx.version, {"throttle_time": 0, "error_code": r.error_code}
        )
    )
