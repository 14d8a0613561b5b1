"""Produce 3-9 (0-2 are advertised and refused, handlers/__init__.py): the Produce handler,
its appends run before the connection reads on; the answer is written by hand."""

from __future__ import annotations

from broker.handlers.produce import PartitionData, ProduceRequest, TopicData
from broker.kafka.answer import Answer
from broker.kafka.connection import CloseConnection
from broker.kafka.wire import I16, I32, I64, NO_TAGS, array_length, string

API_KEY = 0
ORDERED = True  # the appends: pipelined produces reach the log in the order sent


def _ms(value) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


async def handle(ctx, request, started):
    version = ctx.version
    acks = request.acks
    data = ProduceRequest(
        acks,
        _ms(request.timeout),
        [
            TopicData(
                t.name,
                [
                    PartitionData(p.index, p.records if p.records is not None else b"")
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ],
        getattr(request, "transactional_id", None) or "",
    )
    response = await ctx.backend.produce(data, ctx.who, started)
    if acks == 0:
        # Kafka sends no answer to acks=0; a failed append closes the connection instead,
        # the only way such a producer learns to refresh its metadata.
        failed = [
            f"{t.name}-{p.partition}: {p.error_code}"
            for t in response.topics
            for p in t.partitions
            if p.error_code
        ]
        if failed:
            raise CloseConnection(f"acks=0 Produce failed ({', '.join(failed[:3])})")
        return None
    return Answer.of(
        encode(
            version,
            [
                (
                    t.name,
                    [
                        (
                            p.partition,
                            p.error_code,
                            p.base_offset,
                            p.log_append_time_ms,
                            p.log_start_offset,
                            p.error_message,
                        )
                        for p in t.partitions
                    ],
                )
                for t in response.topics
            ],
        )
    )


def encode(version: int, topics) -> bytes:
    """ProduceResponse of `version`; topics: [(name, [(partition, error_code, base_offset,
    log_append_time_ms, log_start_offset, error_message)])]."""
    flexible = version >= 9
    out = [array_length(len(topics), flexible)]
    for name, partitions in topics:
        out.append(string(name, flexible))
        out.append(array_length(len(partitions), flexible))
        for partition, code, base, append_time, start, message in partitions:
            out.append(I32.pack(partition) + I16.pack(code) + I64.pack(base))
            if version >= 2:
                out.append(I64.pack(append_time))
            if version >= 5:
                out.append(I64.pack(start))
            if version >= 8:
                out.append(array_length(0, flexible))  # record_errors
                out.append(string(message or None, flexible))
            if flexible:
                out.append(NO_TAGS)
        if flexible:
            out.append(NO_TAGS)
    if version >= 1:
        out.append(I32.pack(0))  # throttle_time_ms
    if flexible:
        out.append(NO_TAGS)
    return b"".join(out)
