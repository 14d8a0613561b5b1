"""A follower's FetchResponse read from its wire bytes (fetch_response_wire.py): each partition's
records are a view of the received bytes, not a copy (the differential tests against protobuf
are in tests/clients/wire/test_raw_readers_read_as_protobuf.py)."""
from __future__ import annotations

from broker.replication.fetch_response_wire import parse_fetch_response
from clients.wire import broker_pb2 as pb


def test_records_are_a_view_of_the_received_bytes():
    records = bytes(range(256)) * 64
    data = pb.FetchResponse(topics=[pb.FetchTopicResponse(topic="t", partitions=[
        pb.FetchPartitionResponse(partition=3, high_watermark=9, records=records)])]).SerializeToString()
    [topic] = parse_fetch_response(data).topics
    [(fields, answer_records)] = topic.partitions
    assert isinstance(answer_records, memoryview) and answer_records.obj is data
    assert bytes(answer_records) == records and fields.high_watermark == 9
