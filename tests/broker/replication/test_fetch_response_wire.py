"""A follower's FetchResponse read from its wire bytes (fetch_response_wire.py) is the message
protobuf parses from them: the same fields for any message, each partition's records a view of
the received bytes (no copy); bytes protobuf refuses are refused too, with WireFormatError only."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from broker.replication.fetch_response_wire import FetchResponseView, parse_fetch_response
from clients.wire import broker_pb2 as pb
from clients.wire.raw_fields import WireFormatError

int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
aborted = st.builds(pb.AbortedTransaction, producer_id=int64, first_offset=int64)
epochs = st.builds(pb.EpochEndOffset, epoch=int32, end_offset=int64)


@st.composite
def partitions(draw):
    answer = pb.FetchPartitionResponse(
        partition=draw(int32), error_code=draw(int32), error_message=draw(st.text(max_size=6)),
        high_watermark=draw(int64), last_stable_offset=draw(int64), log_start_offset=draw(int64),
        records=draw(st.binary(max_size=64)),
        aborted_transactions=draw(st.lists(aborted, max_size=2)))
    if draw(st.booleans()):
        answer.diverging_epoch.CopyFrom(draw(epochs))
    return answer


topics = st.builds(pb.FetchTopicResponse, topic=st.text(max_size=8),
                   partitions=st.lists(partitions(), max_size=3))
responses = st.builds(pb.FetchResponse, error_code=int32, error_message=st.text(max_size=6),
                      topics=st.lists(topics, max_size=3))


def _plain_partition(p: pb.FetchPartitionResponse) -> tuple:
    fields = pb.FetchPartitionResponse()
    fields.CopyFrom(p)
    fields.ClearField("records")
    return fields.SerializeToString(deterministic=True), bytes(p.records)


def protobuf_reading(data: bytes):
    try:
        message = pb.FetchResponse.FromString(data)
    except Exception:   # noqa: BLE001 - protobuf's DecodeError, whatever its class
        return None
    return (message.error_code, message.error_message,
            [(t.topic, [_plain_partition(p) for p in t.partitions]) for t in message.topics])


def as_plain(view: FetchResponseView) -> tuple:
    return (view.error_code, view.error_message,
            [(t.topic, [(p.fields.SerializeToString(deterministic=True), bytes(p.records))
                        for p in t.partitions]) for t in view.topics])


def ours(data: bytes):
    try:
        return as_plain(parse_fetch_response(data))
    except WireFormatError:
        return None


@settings(max_examples=300, deadline=None)
@given(responses)
def test_every_message_reads_as_protobuf_reads_it(response):
    data = response.SerializeToString()
    assert ours(data) == protobuf_reading(data)


@settings(max_examples=300, deadline=None)
@given(responses, st.lists(st.tuples(st.integers(0, 600), st.integers(0, 255)), max_size=4),
       st.binary(max_size=12))
def test_damaged_and_extended_bytes_read_as_protobuf_reads_them(response, flips, tail):
    data = bytearray(response.SerializeToString() + tail)
    for at, value in flips:
        if at < len(data):
            data[at] = value
    assert ours(bytes(data)) == protobuf_reading(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=48))
def test_random_bytes_read_as_protobuf_reads_them(data):
    assert ours(data) == protobuf_reading(data)


def test_records_are_a_view_of_the_received_bytes():
    records = bytes(range(256)) * 64
    data = pb.FetchResponse(topics=[pb.FetchTopicResponse(topic="t", partitions=[
        pb.FetchPartitionResponse(partition=3, high_watermark=9, records=records)])]).SerializeToString()
    [topic] = parse_fetch_response(data).topics
    [answer] = topic.partitions
    assert isinstance(answer.records, memoryview) and answer.records.obj is data
    assert bytes(answer.records) == records and answer.fields.high_watermark == 9
