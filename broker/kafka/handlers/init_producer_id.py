"""InitProducerId 0-4: the gRPC call (idempotent producers; a transactional id goes to its
coordinator)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import broker_pb2 as pb

API_KEY = 22
ORDERED = False


async def handle(ctx, request, started):
    timeout = request.transaction_timeout
    grpc_request = pb.InitProducerIdRequest(
        transactional_id=request.transactional_id or "",
        transaction_timeout_ms=int(timeout.total_seconds() * 1000)
        if hasattr(timeout, "total_seconds") else int(timeout))
    producer_id = getattr(request, "producer_id", -1)
    if producer_id != -1:
        grpc_request.producer_id = producer_id
        grpc_request.producer_epoch = request.producer_epoch
    r = await ctx.backend.init_producer_id(grpc_request)
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0, "error_code": r.error_code, "producer_id": r.producer_id,
        "producer_epoch": r.producer_epoch}))
