"""Kafka's primitive types, written by hand for the hot responses (Produce, Fetch): legacy or
compact (flexible versions) strings, arrays and bytes, and an empty tagged-field section."""

from __future__ import annotations

import struct

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
NO_TAGS = b"\x00"


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return b"\x00" if flexible else I16.pack(-1)
    data = text.encode("utf-8")
    return (uvarint(len(data) + 1) if flexible else I16.pack(len(data))) + data


def array_length(n: int | None, flexible: bool) -> bytes:
    if n is None:
        return b"\x00" if flexible else I32.pack(-1)
    return uvarint(n + 1) if flexible else I32.pack(n)


def bytes_length(n: int | None, flexible: bool) -> bytes:
    """The length before a (nullable) bytes field: records."""
    return array_length(n, flexible)
