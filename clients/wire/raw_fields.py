"""Protobuf's wire format read by hand, for messages whose large `bytes` fields are wanted as
views of the received buffer rather than the copies protobuf makes (it copies a bytes field into
its arena when it parses, and again into a new `bytes` when the field is read). Malformed input
raises WireFormatError where protobuf would refuse the message."""

from __future__ import annotations

# Wire types.
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


# Below this size protobuf's C parser, copies included, is faster than walking the fields in
# Python (measured: a FetchResponse of 16 KiB of records 2.7 us vs 11.5 us, 64 KiB 4.7 vs 10.6,
# 256 KiB 28 vs 18, 1 MB 67 vs 12.5): the readers built on this module use protobuf below it.
RAW_FROM_BYTES = 128 * 1024


class WireFormatError(ValueError):
    """The bytes are not a protobuf message."""


def parse_with_protobuf(message_type, data: bytes):
    """message_type.FromString(data), its refusal raised as WireFormatError."""
    try:
        return message_type.FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise WireFormatError(f"not a {message_type.__name__}: {exc}") from None


def read_fields(view: memoryview, pos: int, end: int):
    """(field number, wire type, value) of each field in view[pos:end]; a length-delimited
    field's value is its (start, end), a varint's its unsigned value, others' None."""
    while pos < end:
        field, kind, value, pos = read_field(view, pos, end)
        if kind == EGROUP:
            raise WireFormatError(f"an end-group tag (field {field}) outside any group")
        yield field, kind, value


def read_field(view: memoryview, pos: int, end: int) -> tuple[int, int, object, int]:
    tag, after = read_varint(view, pos, end)
    if after - pos > 5 or tag > 0xFFFFFFFF:  # protobuf's tags are 32-bit varints
        raise WireFormatError(f"the tag at byte {pos} is over 32 bits")
    pos = after
    field, kind = tag >> 3, tag & 7
    if field == 0:
        raise WireFormatError(f"field number 0 at byte {pos}")
    value = None
    if kind == VARINT:
        value, pos = read_varint(view, pos, end)
    elif kind == LEN:
        size, after = read_varint(view, pos, end)
        if after - pos > 5:  # and so are lengths
            raise WireFormatError(f"the length at byte {pos} is over 32 bits")
        pos = after
        if size > end - pos:
            raise WireFormatError(
                f"a field of {size} bytes at byte {pos} runs past its "
                f"message ({end - pos} bytes left)"
            )
        value, pos = (pos, pos + size), pos + size
    elif kind in (I64, I32):
        pos += 8 if kind == I64 else 4
        if pos > end:
            raise WireFormatError("a fixed-size field runs past its message")
    elif kind == SGROUP:  # an unknown (deprecated) group: skipped whole, as protobuf does
        while True:
            if pos >= end:
                raise WireFormatError(f"group {field} is not closed")
            inner, inner_kind, _, pos = read_field(view, pos, end)
            if inner_kind == EGROUP:
                if inner != field:
                    raise WireFormatError(f"group {field} ends with field {inner}'s tag")
                break
    elif kind != EGROUP:
        raise WireFormatError(f"wire type {kind} at byte {pos} is not a field's")
    return field, kind, value, pos


def read_varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 70:
        b = view[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise WireFormatError(f"a varint at byte {pos} is cut short or over 10 bytes")
