"""A ProduceRequest read straight from its wire bytes into the Produce handler's dataclasses, so
that each partition's records are a memoryview of the request instead of two copies (protobuf copies a bytes field into its arena
when it parses and again into a new `bytes` when it is read). The other fields come out as
protobuf would give them: unknown fields and fields of an unexpected wire type are skipped, the
last of a repeated scalar wins, an int32 keeps its low 32 bits, a name must be UTF-8."""

from __future__ import annotations

from broker.handlers.produce import PartitionData, ProduceRequest, TopicData
from clients.wire import broker_pb2 as pb
from clients.wire.raw_fields import LEN as _LEN
from clients.wire.raw_fields import VARINT as _VARINT
from clients.wire.raw_fields import WireFormatError
from clients.wire.raw_fields import read_fields as _fields


def from_message(request: pb.ProduceRequest) -> ProduceRequest:
    """For in-process callers holding the message (its records are copies already)."""
    return ProduceRequest(
        request.acks,
        request.timeout_ms,
        [
            TopicData(t.name, [PartitionData(p.partition, p.records) for p in t.partitions])
            for t in request.topics
        ],
        request.transactional_id,
    )


# The bytes are not a ProduceRequest message.
ProduceRequestError = WireFormatError


def parse_produce_request(data: bytes) -> ProduceRequest:
    """The request with each partition's records a view of `data`, whatever its size: a small
    request would parse faster by protobuf (clients/wire/raw_fields.py: RAW_FROM_BYTES), but
    with two copies of each record byte on the leader's append path instead of none."""
    view = memoryview(data)
    acks = timeout_ms = 0
    topics = []
    transactional_id = ""
    for field, kind, value in _fields(view, 0, len(view)):
        if field == 1 and kind == _VARINT:
            acks = _int32(value)
        elif field == 2 and kind == _VARINT:
            timeout_ms = _int32(value)
        elif field == 3 and kind == _LEN:
            topics.append(_topic(view, *value))
        elif field == 4 and kind == _LEN:
            transactional_id = _text(view, *value, "the transactional id")
    return ProduceRequest(acks, timeout_ms, topics, transactional_id)


def _topic(view: memoryview, start: int, end: int) -> TopicData:
    name = ""
    partitions = []
    for field, kind, value in _fields(view, start, end):
        if field == 1 and kind == _LEN:
            name = _text(view, *value, "a topic name")
        elif field == 2 and kind == _LEN:
            partitions.append(_partition(view, *value))
    return TopicData(name, partitions)


def _partition(view: memoryview, start: int, end: int) -> PartitionData:
    partition, records = 0, view[0:0]
    for field, kind, value in _fields(view, start, end):
        if field == 1 and kind == _VARINT:
            partition = _int32(value)
        elif field == 2 and kind == _LEN:
            records = view[value[0] : value[1]]
    return PartitionData(partition, records)


def _text(view: memoryview, start: int, end: int, what: str) -> str:
    try:
        return str(view[start:end], "utf-8")
    except UnicodeDecodeError:
        raise ProduceRequestError(f"{what} is not valid UTF-8") from None


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
