"""A follower's FetchResponse read from its wire bytes: each partition's records come out as a
view of the received buffer, not as protobuf's two copies of them (one into its arena at parse,
one into a new `bytes` when the field is read), which a follower paid on every byte it
replicated. Every other field is parsed by protobuf itself, from the message's bytes minus the
records, so it reads exactly as protobuf would give it."""

from __future__ import annotations

from typing import NamedTuple

from clients.wire import broker_pb2 as pb
from clients.wire.raw_fields import LEN, RAW_FROM_BYTES, parse_with_protobuf, read_field

_TOPICS = 3  # FetchResponse.topics
_PARTITIONS = 2  # FetchTopicResponse.partitions
_RECORDS = 8  # FetchPartitionResponse.records


class PartitionAnswer(NamedTuple):
    fields: pb.FetchPartitionResponse  # everything but the records (or all, if small)
    records: memoryview | bytes


class TopicAnswer(NamedTuple):
    topic: str
    partitions: list[PartitionAnswer]


class FetchResponseView(NamedTuple):
    error_code: int
    error_message: str
    topics: list[TopicAnswer]


def parse_fetch_response(data: bytes) -> FetchResponseView:
    """Large answers field by field (`read_fetch_response`), small ones by protobuf, faster there
    than walking them in Python. Raises WireFormatError (a ValueError) on bytes protobuf would
    not parse either."""
    if len(data) >= RAW_FROM_BYTES:
        return read_fetch_response(data)
    message = parse_with_protobuf(pb.FetchResponse, data)
    return FetchResponseView(
        message.error_code,
        message.error_message,
        [
            TopicAnswer(t.topic, [PartitionAnswer(p, p.records) for p in t.partitions])
            for t in message.topics
        ],
    )


def read_fetch_response(data: bytes) -> FetchResponseView:
    """The answer with each partition's records a view of `data`."""
    view = memoryview(data)
    rest, topic_spans = _split(view, 0, len(view), _TOPICS)
    top = parse_with_protobuf(pb.FetchResponse, rest)
    return FetchResponseView(
        top.error_code, top.error_message, [_topic(view, *span) for span in topic_spans]
    )


def _topic(view: memoryview, start: int, end: int) -> TopicAnswer:
    rest, partition_spans = _split(view, start, end, _PARTITIONS)
    return TopicAnswer(
        parse_with_protobuf(pb.FetchTopicResponse, rest).topic,
        [_partition(view, *span) for span in partition_spans],
    )


def _partition(view: memoryview, start: int, end: int) -> PartitionAnswer:
    rest, records_spans = _split(view, start, end, _RECORDS)
    # A singular field given twice: the last one counts, as in protobuf.
    records = view[records_spans[-1][0] : records_spans[-1][1]] if records_spans else view[0:0]
    return PartitionAnswer(parse_with_protobuf(pb.FetchPartitionResponse, rest), records)


def _split(view: memoryview, start: int, end: int, wanted: int) -> tuple[bytes, list]:
    """(the bytes of every field but `wanted`, the (start, end) of each `wanted` field's body)."""
    rest, spans, pos = [], [], start
    while pos < end:
        field, kind, value, after = read_field(view, pos, end)
        if field == wanted and kind == LEN:
            spans.append(value)
        else:
            rest.append(view[pos:after])
        pos = after
    return b"".join(rest), spans
