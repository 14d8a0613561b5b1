"""A fetch answered after another fetch already moved the partition past its offset (the old
leader's answer, late, once the new leader's came back: one fetch loop runs per node) adds
nothing: each record reaches the consumer once. A chaos run under docker found polls that
returned offsets 201, 202, 201, 202 when a paused leader's fetch came back late."""

import trio

from clients.consumer.fetcher import Fetcher
from clients.record.codec import encode_batch
from clients.types import TopicPartition
from clients.wire import broker_pb2 as pb

TP = TopicPartition("t", 0)


def answer(base_offset: int, values: list[bytes]) -> pb.FetchResponse:
    records = encode_batch(
        [(None, v, (), 1_700_000_000_000) for v in values], base_offset=base_offset
    )
    return pb.FetchResponse(
        topics=[
            pb.FetchTopicResponse(
                topic="t",
                partitions=[
                    pb.FetchPartitionResponse(
                        partition=0,
                        high_watermark=base_offset + len(values),
                        last_stable_offset=base_offset + len(values),
                        records=records,
                    )
                ],
            )
        ]
    )


def test_a_second_answer_for_the_same_fetch_offset_is_dropped():
    fetcher = Fetcher(
        None,
        fetch_min_bytes=1,
        fetch_max_wait_ms=100,
        fetch_max_bytes=1 << 20,
        max_partition_fetch_bytes=1 << 20,
        auto_offset_reset="earliest",
        check_crcs=True,
        request_timeout_ms=1000,
    )
    fetcher.assigned = [TP]
    fetcher.fetch_offsets[TP] = fetcher.positions[TP] = 201
    asked = [(TP, 201, 0)]  # what both node loops sent: fetch from 201

    async def both_answers():
        await fetcher._handle_fetch(asked, answer(201, [b"202", b"203"]))  # the new leader
        await fetcher._handle_fetch(asked, answer(201, [b"202", b"203"]))  # the old one, late

    trio.run(both_answers)

    assert len(fetcher.buffer) == 1
    assert [r.offset for r in fetcher.buffer[0].take(10)] == [201, 202]
    assert fetcher.fetch_offsets[TP] == 203
