"""The Produce request read from its wire bytes (produce_request.py): unknown fields and groups
skipped, records as views of the request (no copy), over-long tags and lengths refused as
protobuf refuses them (the differential tests against protobuf are in
tests/clients/wire/test_raw_readers_read_as_protobuf.py)."""

from __future__ import annotations

from broker.handlers.produce import ProduceRequest
from broker.services.produce_request import ProduceRequestError, from_message, parse_produce_request
from clients.wire import broker_pb2 as pb


def as_plain(data: ProduceRequest) -> tuple:
    return (
        data.acks,
        data.timeout_ms,
        [(t.name, [(p.partition, bytes(p.records)) for p in t.partitions]) for t in data.topics],
        data.transactional_id,
    )


def protobuf_reading(data: bytes):
    try:
        return as_plain(from_message(pb.ProduceRequest.FromString(data)))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError, whatever its class
        return None


def ours(data: bytes):
    try:
        return as_plain(parse_produce_request(data))
    except ProduceRequestError:
        return None


def test_unknown_fields_and_groups_are_skipped():
    known = pb.ProduceRequest(
        acks=1,
        topics=[
            pb.TopicProduceData(
                name="t", partitions=[pb.PartitionProduceData(partition=2, records=b"rr")]
            )
        ],
    ).SerializeToString()
    unknown = bytes(
        [
            0x48,
            0x05,  # field 9 varint
            0x53,
            0x08,
            0x01,
            0x54,  # group 10 holding field 1 varint
            0x1D,
            1,
            2,
            3,
            4,
        ]
    )  # field 3 as fixed32: not the topics' wire type
    assert (
        ours(unknown + known)
        == protobuf_reading(unknown + known)
        == (1, 0, [("t", [(2, b"rr")])], "")
    )


def test_records_are_views_of_the_request():
    data = pb.ProduceRequest(
        topics=[
            pb.TopicProduceData(
                name="t", partitions=[pb.PartitionProduceData(partition=0, records=b"x" * 1000)]
            )
        ]
    ).SerializeToString()
    records = parse_produce_request(data).topics[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is data and bytes(records) == b"x" * 1000


def test_tags_and_lengths_over_32_bits_are_refused_as_protobuf_refuses_them():
    for data in (
        b"\x08\x00\x80\x80\x80\x80\x80\x01\x00",  # a tag of 2^35
        b"\x1a\x81\x80\x80\x80\x80\x00",  # a length in six bytes
        b"\x08\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00",
    ):  # a 10-byte acks: fine
        assert ours(data) == protobuf_reading(data)
    assert ours(b"\x08\x00\x80\x80\x80\x80\x80\x01\x00") is None
