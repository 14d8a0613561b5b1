"""The Produce request read from its wire bytes (produce_request.py) is the message protobuf
parses from them: same fields for any message, records as views of the request (no copy); bytes
protobuf refuses are refused too, and nothing raises but ProduceRequestError."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from broker.server.produce_request import ProduceData, ProduceRequestError, parse_produce_request
from clients.wire import broker_pb2 as pb

int32 = st.integers(-(1 << 31), (1 << 31) - 1)
partitions = st.builds(pb.PartitionProduceData, partition=int32, records=st.binary(max_size=64))
topics = st.builds(pb.TopicProduceData, name=st.text(max_size=8),
                   partitions=st.lists(partitions, max_size=3))
requests = st.builds(pb.ProduceRequest, acks=int32, timeout_ms=int32,
                     topics=st.lists(topics, max_size=3))


def as_plain(data: ProduceData) -> tuple:
    return (data.acks, data.timeout_ms,
            [(t.name, [(p.partition, bytes(p.records)) for p in t.partitions])
             for t in data.topics])


def protobuf_reading(data: bytes):
    try:
        return as_plain(ProduceData.from_message(pb.ProduceRequest.FromString(data)))
    except Exception:   # noqa: BLE001 - protobuf's DecodeError, whatever its class
        return None


def ours(data: bytes):
    try:
        return as_plain(parse_produce_request(data))
    except ProduceRequestError:
        return None


@settings(max_examples=300, deadline=None)
@given(requests)
def test_every_message_reads_as_protobuf_reads_it(request):
    data = request.SerializeToString()
    assert ours(data) == protobuf_reading(data)


@settings(max_examples=300, deadline=None)
@given(requests, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4),
       st.binary(max_size=12))
def test_damaged_and_extended_bytes_read_as_protobuf_reads_them(request, flips, tail):
    data = bytearray(request.SerializeToString() + tail)
    for at, value in flips:
        if at < len(data):
            data[at] = value
    assert ours(bytes(data)) == protobuf_reading(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=48))
def test_random_bytes_read_as_protobuf_reads_them(data):
    assert ours(data) == protobuf_reading(data)


def test_unknown_fields_and_groups_are_skipped():
    known = pb.ProduceRequest(acks=1, topics=[pb.TopicProduceData(name="t", partitions=[
        pb.PartitionProduceData(partition=2, records=b"rr")])]).SerializeToString()
    unknown = bytes([0x48, 0x05,                # field 9 varint
                     0x53, 0x08, 0x01, 0x54,    # group 10 holding field 1 varint
                     0x1d, 1, 2, 3, 4])         # field 3 as fixed32: not the topics' wire type
    assert ours(unknown + known) == protobuf_reading(unknown + known) == \
        (1, 0, [("t", [(2, b"rr")])])


def test_records_are_views_of_the_request():
    data = pb.ProduceRequest(topics=[pb.TopicProduceData(name="t", partitions=[
        pb.PartitionProduceData(partition=0, records=b"x" * 1000)])]).SerializeToString()
    records = parse_produce_request(data).topics[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is data and bytes(records) == b"x" * 1000


def test_tags_and_lengths_over_32_bits_are_refused_as_protobuf_refuses_them():
    for data in (b"\x08\x00\x80\x80\x80\x80\x80\x01\x00",     # a tag of 2^35
                 b"\x1a\x81\x80\x80\x80\x80\x00",             # a length in six bytes
                 b"\x08\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00"):   # a 10-byte acks: fine
        assert ours(data) == protobuf_reading(data)
    assert ours(b"\x08\x00\x80\x80\x80\x80\x80\x01\x00") is None
