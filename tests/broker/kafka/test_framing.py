"""Kafka's request header and frame size, every length bounded: a bad frame is a FrameError,
never an IndexError or a read past the frame."""

from __future__ import annotations

import struct

import pytest

from broker.kafka.framing import (
    FrameError,
    frame_size,
    parse_request_header,
    read_uvarint,
    response_header,
)


def header(api_key=3, version=1, correlation=7, client_id=b"me", tags=b""):
    head = struct.pack(">hhi", api_key, version, correlation)
    head += (
        struct.pack(">h", -1)
        if client_id is None
        else struct.pack(">h", len(client_id)) + client_id
    )
    return head + tags


def test_v1_header_of_a_non_flexible_version():
    h = parse_request_header(header(3, 1) + b"body")
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 1, 7, "me")
    assert not h.flexible and h.size == 12


def test_v2_header_skips_tagged_fields():
    tags = b"\x02" + b"\x00\x01z" + b"\x05\x02ab"
    h = parse_request_header(header(3, 12, tags=tags) + b"body")
    assert h.flexible and h.size == 12 + len(tags)


def test_null_client_id():
    assert parse_request_header(header(18, 0, client_id=None)).client_id is None


@pytest.mark.parametrize(
    "frame, why",
    [
        (header(3, 1, client_id=b"x")[:-1] + b"", "client_id"),  # client_id overruns
        (struct.pack(">hhih", 3, 1, 7, -2), "client_id length"),
        (header(3, 12, tags=b"\x01\x00\x09ab"), "tagged field"),  # a tag larger than the frame
        (header(3, 12, tags=b"\xff\xff\xff\xff\x0f"), "tagged fields"),  # 4 billion tags
        (header(3, 12, tags=b"\x80\x80\x80\x80\x80\x01"), "varint"),  # a 6-byte varint
        (header(3, 12, tags=b""), "varint"),  # the count is missing
        (b"\x00\x03\x00", "smaller"),
        (header(3, 1, client_id=b"\xff\xfe"), "UTF-8"),
    ],
)
def test_bad_headers_are_frame_errors(frame, why):
    with pytest.raises(FrameError, match=why):
        parse_request_header(frame)


def test_frame_size_is_bounded_both_ways():
    assert frame_size(struct.pack(">i", 100), 1000) == 100
    with pytest.raises(FrameError, match="socket.request.max.bytes"):
        frame_size(struct.pack(">i", 1001), 1000)
    with pytest.raises(FrameError, match="smaller"):
        frame_size(struct.pack(">i", -1), 1000)
    with pytest.raises(FrameError, match="smaller"):
        frame_size(struct.pack(">i", 3), 1000)


def test_uvarint():
    assert read_uvarint(b"\xac\x02", 0, 2) == (300, 2)


def test_response_headers():
    assert response_header(5, 0) == b"\x00\x00\x00\x05"
    assert response_header(5, 1) == b"\x00\x00\x00\x05\x00"


def test_a_too_new_api_versions_header_is_read_whatever_follows_its_client_id():
    # Only its correlation id matters: the answer is v0's UNSUPPORTED_VERSION (KIP-511).
    h = parse_request_header(header(18, 77, tags=b""))
    assert (h.api_key, h.api_version, h.correlation_id) == (18, 77, 7)
    with pytest.raises(FrameError):
        parse_request_header(header(18, 3, tags=b""))  # a served one must be well formed
