"""ListOffsets 1-7: the gRPC ListOffsets call (earliest -2, latest -1, by timestamp)."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import broker_pb2 as pb

API_KEY = 2
ORDERED = False


async def handle(ctx, request, started):
    grpc_request = pb.ListOffsetsRequest(
        replica_id=-1, isolation_level=getattr(request, "isolation_level", 0),
        topics=[pb.ListOffsetsTopic(name=t.name, partitions=[pb.ListOffsetsPartition(
            partition=p.partition_index, timestamp=p.timestamp,
            current_leader_epoch=getattr(p, "current_leader_epoch", -1))
            for p in t.partitions]) for t in request.topics])
    response = await ctx.backend.list_offsets(grpc_request)
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0,
        "topics": [{"name": t.name, "partitions": [{
            "partition_index": p.partition, "error_code": p.error_code,
            "timestamp": p.timestamp, "offset": p.offset, "leader_epoch": p.leader_epoch}
            for p in t.partitions]} for t in response.topics]}))
