"""A walk over a request's bytes by its kio schema before kio decodes it: kio's native reader
allocates an array for the count the bytes claim, so 5 hostile bytes claiming 4 billion
elements abort the whole process (a Rust allocation failure is no exception). Every length and
count is checked against the bytes left here first; a lie is a FrameError."""

from __future__ import annotations

import dataclasses
import struct
import typing
from functools import cache

from broker.kafka.codec import _hints, _strip_optional
from broker.kafka.framing import FrameError, read_uvarint

_FIXED = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# Nesting in Kafka's schemas is a handful of levels; a cycle would be a kio bug, not input.
MAX_DEPTH = 16


class _Field(typing.NamedTuple):
    kind: str  # a kafka_type, or "entity"
    array: bool
    entity: type | None  # the nested entity, for "entity"
    tag: int | None


@cache
def _plan(cls: type) -> tuple[list[_Field], dict[int, _Field]]:
    hints = _hints(cls)
    plain, tagged = [], {}
    for f in dataclasses.fields(cls):
        tp = _strip_optional(hints[f.name])
        array = typing.get_origin(tp) is tuple
        item = _strip_optional(typing.get_args(tp)[0]) if array else tp
        kind = f.metadata.get("kafka_type")
        field = _Field(
            kind or "entity", array, item if kind is None else None, f.metadata.get("tag")
        )
        if field.tag is None:
            plain.append(field)
        else:
            tagged[field.tag] = field
    return plain, tagged


def check_entity(cls: type, data, at: int, end: int, depth: int = 0) -> int:
    """The position after one `cls` at `at`; FrameError if any length overruns `end`."""
    if depth > MAX_DEPTH:
        raise FrameError("entities nested too deep")
    flexible = cls.__flexible__
    plain, tagged = _plan(cls)
    for field in plain:
        at = _check_field(field, flexible, data, at, end, depth)
    if flexible:
        count, at = read_uvarint(data, at, end)
        if count > end - at:
            raise FrameError(f"{count} tagged fields in {end - at} bytes")
        for _ in range(count):
            tag, at = read_uvarint(data, at, end)
            size, at = read_uvarint(data, at, end)
            if size > end - at:
                raise FrameError("a tagged field runs past the end of the frame")
            if tag in tagged:
                _check_field(tagged[tag], flexible, data, at, at + size, depth)
            at += size
    return at


def _check_field(field: _Field, flexible: bool, data, at: int, end: int, depth: int) -> int:
    if not field.array:
        return _check_one(field, flexible, data, at, end, depth)
    count, at = _length(flexible, data, at, end, 4)
    if count <= 0:
        return at
    size = _FIXED.get(field.kind)
    if size is not None:
        if count * size > end - at:
            raise FrameError(f"an array of {count} {field.kind} runs past the frame")
        return at + count * size
    if count > end - at:  # every element takes a byte at least
        raise FrameError(f"an array of {count} elements in {end - at} bytes")
    for _ in range(count):
        at = _check_one(field, flexible, data, at, end, depth)
    return at


def _check_one(field: _Field, flexible: bool, data, at: int, end: int, depth: int) -> int:
    kind = field.kind
    size = _FIXED.get(kind)
    if size is not None:
        if size > end - at:
            raise FrameError(f"a {kind} runs past the end of the frame")
        return at + size
    if kind == "entity":
        return check_entity(field.entity, data, at, end, depth + 1)
    if kind == "string":
        n, at = _length(flexible, data, at, end, 2)
    elif kind in ("bytes", "records"):
        n, at = _length(flexible, data, at, end, 4)
    else:
        raise FrameError(f"kraft cannot check a field of type {kind}")
    if n > end - at:
        raise FrameError(f"a {kind} of {n} bytes runs past the frame")
    return at + max(n, 0)


def _length(flexible: bool, data, at: int, end: int, width: int) -> tuple[int, int]:
    """A length or count: compact (uvarint N+1, 0 null -> -1) or legacy (int16/int32, -1
    null); anything below -1 is refused."""
    if flexible:
        n, at = read_uvarint(data, at, end)
        return n - 1, at
    if width > end - at:
        raise FrameError("a length runs past the end of the frame")
    n = (_I16 if width == 2 else _I32).unpack_from(data, at)[0]
    if n < -1:
        raise FrameError(f"a negative length {n}")
    return n, at + width
