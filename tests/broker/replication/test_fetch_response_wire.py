"""A follower's FetchResponse read from its wire bytes (fetch_response_wire.py) when it is large:
each partition's records are a view of the received bytes, not a copy; a small one is read by
protobuf, into the same shape (the differential tests against protobuf are in
tests/clients/wire/test_raw_readers_read_as_protobuf.py)."""

from __future__ import annotations

from broker.replication.fetch_response_wire import parse_fetch_response
from clients.wire import broker_pb2 as pb
from clients.wire.raw_fields import RAW_FROM_BYTES


def _response(records: bytes) -> bytes:
    return pb.FetchResponse(
        topics=[
            pb.FetchTopicResponse(
                topic="t",
                partitions=[
                    pb.FetchPartitionResponse(
                        partition=3,
                        high_watermark=9,
                        records=records,
                        aborted_transactions=[pb.AbortedTransaction(producer_id=7)],
                    )
                ],
            )
        ]
    ).SerializeToString()


def test_a_large_answer_gives_views_of_its_records_and_a_small_one_the_same_fields():
    big_records, small_records = bytes(range(256)) * (RAW_FROM_BYTES // 256), b"r" * 100
    big, small = _response(big_records), _response(small_records)
    for data, records, view in ((big, big_records, True), (small, small_records, False)):
        [topic] = parse_fetch_response(data).topics
        [(fields, answer_records)] = topic.partitions
        assert topic.topic == "t" and fields.partition == 3 and fields.high_watermark == 9
        assert [t.producer_id for t in fields.aborted_transactions] == [7]
        assert bytes(answer_records) == records
        assert isinstance(answer_records, memoryview) == view
        if view:
            assert answer_records.obj is data
