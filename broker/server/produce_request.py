"""A ProduceRequest read straight from its wire bytes, so that each partition's records are a
memoryview of the request instead of two copies (protobuf copies a bytes field into its arena
when it parses and again into a new `bytes` when it is read). The other fields come out as
protobuf would give them: unknown fields and fields of an unexpected wire type are skipped, the
last of a repeated scalar wins, an int32 keeps its low 32 bits, a name must be UTF-8."""
from __future__ import annotations

from typing import NamedTuple

from clients.wire import broker_pb2 as pb

_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = 0, 1, 2, 3, 4, 5


class PartitionData(NamedTuple):
    partition: int
    records: memoryview | bytes


class TopicData(NamedTuple):
    name: str
    partitions: list[PartitionData]


class ProduceData(NamedTuple):
    acks: int
    timeout_ms: int
    topics: list[TopicData]

    @classmethod
    def from_message(cls, request: pb.ProduceRequest) -> "ProduceData":
        """For in-process callers holding the message (its records are copies already)."""
        return cls(request.acks, request.timeout_ms, [
            TopicData(t.name, [PartitionData(p.partition, p.records) for p in t.partitions])
            for t in request.topics])


class ProduceRequestError(ValueError):
    """The bytes are not a ProduceRequest message."""


def parse_produce_request(data: bytes) -> ProduceData:
    view = memoryview(data)
    acks = timeout_ms = 0
    topics = []
    for field, kind, value in _fields(view, 0, len(view)):
        if field == 1 and kind == _VARINT:
            acks = _int32(value)
        elif field == 2 and kind == _VARINT:
            timeout_ms = _int32(value)
        elif field == 3 and kind == _LEN:
            topics.append(_topic(view, *value))
    return ProduceData(acks, timeout_ms, topics)


def _topic(view: memoryview, start: int, end: int) -> TopicData:
    name = ""
    partitions = []
    for field, kind, value in _fields(view, start, end):
        if field == 1 and kind == _LEN:
            try:
                name = str(view[value[0]:value[1]], "utf-8")
            except UnicodeDecodeError:
                raise ProduceRequestError("a topic name is not valid UTF-8") from None
        elif field == 2 and kind == _LEN:
            partitions.append(_partition(view, *value))
    return TopicData(name, partitions)


def _partition(view: memoryview, start: int, end: int) -> PartitionData:
    partition, records = 0, view[0:0]
    for field, kind, value in _fields(view, start, end):
        if field == 1 and kind == _VARINT:
            partition = _int32(value)
        elif field == 2 and kind == _LEN:
            records = view[value[0]:value[1]]
    return PartitionData(partition, records)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _fields(view: memoryview, pos: int, end: int):
    """(field number, wire type, value) of each field in view[pos:end]; a length-delimited
    field's value is its (start, end), a varint's its unsigned value, others' None."""
    while pos < end:
        field, kind, value, pos = _field(view, pos, end)
        if kind == _EGROUP:
            raise ProduceRequestError(f"an end-group tag (field {field}) outside any group")
        yield field, kind, value


def _field(view: memoryview, pos: int, end: int) -> tuple[int, int, object, int]:
    tag, after = _varint(view, pos, end)
    if after - pos > 5 or tag > 0xFFFFFFFF:      # protobuf's tags are 32-bit varints
        raise ProduceRequestError(f"the tag at byte {pos} is over 32 bits")
    pos = after
    field, kind = tag >> 3, tag & 7
    if field == 0:
        raise ProduceRequestError(f"field number 0 at byte {pos}")
    value = None
    if kind == _VARINT:
        value, pos = _varint(view, pos, end)
    elif kind == _LEN:
        size, after = _varint(view, pos, end)
        if after - pos > 5:                         # and so are lengths
            raise ProduceRequestError(f"the length at byte {pos} is over 32 bits")
        pos = after
        if size > end - pos:
            raise ProduceRequestError(f"a field of {size} bytes at byte {pos} runs past its "
                                      f"message ({end - pos} bytes left)")
        value, pos = (pos, pos + size), pos + size
    elif kind in (_I64, _I32):
        pos += 8 if kind == _I64 else 4
        if pos > end:
            raise ProduceRequestError("a fixed-size field runs past its message")
    elif kind == _SGROUP:       # an unknown (deprecated) group: skipped whole, as protobuf does
        while True:
            if pos >= end:
                raise ProduceRequestError(f"group {field} is not closed")
            inner, inner_kind, _, pos = _field(view, pos, end)
            if inner_kind == _EGROUP:
                if inner != field:
                    raise ProduceRequestError(f"group {field} ends with field {inner}'s tag")
                break
    elif kind != _EGROUP:
        raise ProduceRequestError(f"wire type {kind} at byte {pos} is not a field's")
    return field, kind, value, pos


def _varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 70:
        b = view[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise ProduceRequestError(f"a varint at byte {pos} is cut short or over 10 bytes")
