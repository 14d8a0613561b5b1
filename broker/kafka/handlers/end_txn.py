"""EndTxn 0-3: the transaction handler's (commit or abort: the coordinator writes the markers)."""

from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from broker.transaction import messages as m

API_KEY = 26
ORDERED = False


async def handle(ctx, request, started):
    r = await ctx.backend.end_txn(
        m.EndTxnRequest(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            bool(request.committed),
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY, ctx.version, {"throttle_time": 0, "error_code": r.error_code}
        )
    )
