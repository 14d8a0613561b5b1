"""ListOffsets 1-7: the ListOffsets handler (earliest -2, latest -1, by timestamp)."""

from __future__ import annotations

from broker.handlers import list_offsets as lo
from broker.kafka import codec
from broker.kafka.answer import Answer

API_KEY = 2
ORDERED = False


async def handle(ctx, request, started):
    response = ctx.backend.list_offsets(
        lo.ListOffsetsRequest(
            [
                lo.ListOffsetsTopic(
                    t.name,
                    [
                        lo.ListOffsetsPartition(
                            p.partition_index, p.timestamp, getattr(p, "current_leader_epoch", -1)
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
            getattr(request, "isolation_level", 0),
        ),
        ctx.who,
    )
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p.partition,
                                "error_code": p.error_code,
                                "timestamp": p.timestamp,
                                "offset": p.offset,
                                "leader_epoch": p.leader_epoch,
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in response.topics
                ],
            },
        )
    )
