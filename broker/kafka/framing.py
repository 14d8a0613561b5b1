"""Kafka's framing, sans I/O: a 4-byte size before every message, the request header (v0-v2,
v2 with tagged fields) and the response header (v0, v1 with tagged fields). Every length read
from a frame is checked against what is left of it; a bad frame raises FrameError."""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.kafka.apis import API_VERSIONS, APIS, header_versions

_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")  # api_key, api_version, correlation_id
# The smallest request: api_key, api_version, correlation_id and a null client_id.
MIN_FRAME = _HEAD.size + 2
# A client id longer than this is hostile or broken (Kafka's is a short string, at most 32767).
MAX_CLIENT_ID = 32767
# Tagged fields in one header: Kafka defines none for requests; a few unknown ones are skipped.
MAX_TAGGED_FIELDS = 64


class FrameError(ValueError):
    """The bytes are not a Kafka request: the connection is closed, the node goes on."""


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes of the header: the body starts there
    flexible: bool  # the body has compact types and tagged fields


def frame_size(prefix: bytes, max_bytes: int) -> int:
    """The size a frame's 4-byte prefix announces; FrameError outside MIN_FRAME..max_bytes
    (Kafka's socket.request.max.bytes)."""
    (size,) = _SIZE.unpack(prefix)
    if size < MIN_FRAME:
        raise FrameError(f"a frame of {size} bytes is smaller than any request header")
    if size > max_bytes:
        raise FrameError(f"a frame of {size} bytes is above socket.request.max.bytes ({max_bytes})")
    return size


def read_uvarint(data, at: int, end: int) -> tuple[int, int]:
    """(value, position after it); at most 5 bytes, as Kafka's 32-bit unsigned varint."""
    value = shift = 0
    for _i in range(5):
        if at >= end:
            raise FrameError("a varint runs past the end of the frame")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7
    raise FrameError("a varint longer than 5 bytes")


def skip_tagged_fields(data, at: int, end: int) -> int:
    count, at = read_uvarint(data, at, end)
    if count > MAX_TAGGED_FIELDS:
        raise FrameError(f"{count} tagged fields in a header")
    for _ in range(count):
        _tag, at = read_uvarint(data, at, end)
        size, at = read_uvarint(data, at, end)
        if size > end - at:
            raise FrameError("a tagged field runs past the end of the frame")
        at += size
    return at


def parse_request_header(frame) -> RequestHeader:
    """The header of one frame (the bytes after the size prefix). The header's version follows
    from the API and its version (apis.header_versions); an API kraft does not know is read as
    header v1, which is all a client needs to get its error."""
    end = len(frame)
    if end < MIN_FRAME:
        raise FrameError(f"a frame of {end} bytes is smaller than any request header")
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    (length,) = struct.unpack_from(">h", frame, _HEAD.size)
    at = _HEAD.size + 2
    if length < -1:
        raise FrameError(f"client_id length {length}")
    client_id = None
    if length >= 0:
        if length > end - at:
            raise FrameError("client_id runs past the end of the frame")
        try:
            client_id = bytes(frame[at : at + length]).decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("client_id is not UTF-8") from None
        at += length
    request_version, _ = header_versions(api_key, api_version)
    if request_version >= 2:
        try:
            at = skip_tagged_fields(frame, at, end)
        except FrameError:
            # An ApiVersions newer than any served is answered from its correlation id alone
            # (KIP-511), however its header ends: its body is never read.
            if api_key != API_VERSIONS or api_version <= APIS[API_VERSIONS].max_version:
                raise
            at = end
    return RequestHeader(api_key, api_version, correlation_id, client_id, at, request_version >= 2)


def response_header(correlation_id: int, version: int) -> bytes:
    """Response header v0 (the correlation id) or v1 (and no tagged fields)."""
    return struct.pack(">i", correlation_id) + (b"\x00" if version >= 1 else b"")


def size_prefix(size: int) -> bytes:
    return _SIZE.pack(size)
