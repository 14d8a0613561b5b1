"""OffsetCommit 2-8: the gRPC call; run whole before the next request is read, so a
connection's commits are stored in the order sent."""
from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.wire import group_pb2 as gpb

API_KEY = 8
ORDERED = True


async def handle(ctx, request, started):
    generation = getattr(request, "generation_id_or_member_epoch",
                         getattr(request, "generation_id", -1))
    grpc_request = gpb.OffsetCommitRequest(
        group_id=request.group_id, generation_id=generation, member_id=request.member_id,
        partitions=[gpb.CommitPartition(
            topic=t.name, partition=p.partition_index, offset=p.committed_offset,
            leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata or "") for t in request.topics for p in t.partitions])
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        grpc_request.group_instance_id = instance
    r = await ctx.backend.offset_commit(grpc_request)
    errors = {(p.topic, p.partition): p.error_code for p in r.partitions}
    return Answer.of(codec.encode_response(API_KEY, ctx.version, {
        "throttle_time": 0,
        "topics": [{"name": t.name, "partitions": [{
            "partition_index": p.partition_index,
            # A whole-request error (NOT_COORDINATOR...) is every partition's in Kafka's answer.
            "error_code": r.error_code or errors.get((t.name, p.partition_index), 0)}
            for p in t.partitions]} for t in request.topics]}))
