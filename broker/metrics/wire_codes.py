"""The error codes of a serialized answer read off its bytes, without parsing it: a Fetch answer
of a megabyte is mostly records, which parsing would copy (80 µs) to read a few small fields.
Walks the protobuf wire format along the fields that lead to an `error_code`, skips the rest."""

from __future__ import annotations

from typing import Any

# field number -> None (an error_code: a varint) or the plan of the message it holds
WirePlan = dict[int, Any]
_INT_TYPES = frozenset((1, 3, 4, 5, 6, 7, 13, 15, 16, 17, 18))  # FieldDescriptor int types


def wire_plan(descriptor, _seen: frozenset = frozenset()) -> WirePlan:
    plan: WirePlan = {}
    for field in descriptor.fields:
        if field.name == "error_code" and field.type in _INT_TYPES and not field.is_repeated:
            plan[field.number] = None
            continue
        sub = field.message_type
        if sub is None or sub.GetOptions().map_entry or sub.full_name in _seen:
            continue
        nested = wire_plan(sub, _seen | {descriptor.full_name})
        if nested:
            plan[field.number] = nested
    return plan


def wire_error_counts(data: bytes, plan: WirePlan) -> dict[int, int]:
    """{error code: how many}, as error_counts gives for the parsed message: proto3 leaves a
    zero error_code off the wire, so a message of the plan that shows none counts NONE."""
    out: dict[int, int] = {}
    _scan(data, 0, len(data), plan, out)
    return out or {0: 1}


def _scan(data: bytes, pos: int, end: int, plan: WirePlan, out: dict[int, int]) -> None:
    seen = False
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
            if number in plan and plan[number] is None:
                code = value - (1 << 64) if value >= 1 << 63 else value  # negative int32s
                out[code] = out.get(code, 0) + 1
                seen = True
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            nested = plan.get(number)
            if nested:
                _scan(data, pos, pos + length, nested, out)
            pos += length
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire_type} at byte {pos}: not an answer of ours")
    if not seen and None in plan.values():
        out[0] = out.get(0, 0) + 1
    if pos != end:
        raise ValueError("a field runs past its message")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
