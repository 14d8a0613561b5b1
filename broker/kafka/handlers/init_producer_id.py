"""InitProducerId 0-4: the InitProducerId handler (idempotent producers; a transactional id
goes to its coordinator)."""

from __future__ import annotations

from broker.handlers.init_producer_id import InitProducerIdRequest
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 22
ORDERED = False


async def handle(ctx, request, started):
    timeout = request.transaction_timeout
    producer_id = getattr(request, "producer_id", -1)
    r = await ctx.backend.init_producer_id(
        InitProducerIdRequest(
            transactional_id=request.transactional_id or "",
            transaction_timeout_ms=int(timeout.total_seconds() * 1000)
            if hasattr(timeout, "total_seconds")
            else int(timeout),
            producer_id=None if producer_id == -1 else producer_id,
            producer_epoch=None if producer_id == -1 else request.producer_epoch,
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "error_code": r.error_code,
                "producer_id": r.producer_id,
                "producer_epoch": r.producer_epoch,
            },
        )
    )
