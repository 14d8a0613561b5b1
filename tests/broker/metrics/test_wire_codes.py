"""Error codes read off an answer's bytes are the ones parsing it finds: nested, repeated,
negative, zero (absent on the wire), with large records skipped."""

from __future__ import annotations

import pytest

from broker.metrics.interceptor import error_counts, error_plan
from broker.metrics.wire_codes import wire_error_counts, wire_plan
from clients.errors import ErrorCode as E
from clients.wire import broker_pb2 as bpb
from clients.wire import group_pb2 as gpb

_TOPIC = bpb.FetchResponse.DESCRIPTOR.fields_by_name["topics"].message_type
_PARTITION = _TOPIC.fields_by_name["partitions"].message_type
Topic = getattr(bpb, _TOPIC.name)
Partition = getattr(bpb, _PARTITION.name)


def fetch(top: int, *partitions: tuple[int, bytes]) -> bpb.FetchResponse:
    return bpb.FetchResponse(
        error_code=top,
        topics=[
            Topic(
                topic="a",
                partitions=[
                    Partition(partition=i, error_code=c, records=r, high_watermark=1 << 40)
                    for i, (c, r) in enumerate(partitions)
                ],
            ),
            Topic(
                topic="b", partitions=[Partition(partition=0, error_code=E.UNKNOWN_SERVER_ERROR)]
            ),
        ],
    )


@pytest.mark.parametrize(
    "message",
    [
        fetch(0, (0, b"x" * 100_000), (E.NOT_LEADER_OR_FOLLOWER, b""), (0, b"\x80" * 300)),
        fetch(E.UNKNOWN_SERVER_ERROR),
        bpb.FetchResponse(),
        bpb.ProduceResponse(
            topics=[
                bpb.TopicProduceResponse(
                    name="t",
                    partitions=[
                        bpb.PartitionProduceResponse(partition=p, error_code=c, base_offset=2**33)
                        for p, c in enumerate((0, E.NOT_ENOUGH_REPLICAS, 0))
                    ],
                )
            ]
        ),
        gpb.HeartbeatResponse(error_code=E.REBALANCE_IN_PROGRESS),
        gpb.HeartbeatResponse(),
    ],
)
def test_the_bytes_give_the_codes_the_message_has(message):
    descriptor = message.DESCRIPTOR
    assert wire_error_counts(message.SerializeToString(), wire_plan(descriptor)) == error_counts(
        message, error_plan(descriptor)
    )


def test_bytes_that_are_not_the_message_are_refused():
    with pytest.raises((ValueError, IndexError)):
        wire_error_counts(b"\x0a\x05ab", wire_plan(bpb.FetchResponse.DESCRIPTOR))
