"""Hostile bytes at a real node's Kafka listener: frames over socket.request.max.bytes, negative
sizes, headers that overrun, counts that lie, unknown APIs, and a hypothesis fuzzer over the
frame and header grammar. Each closes (at most) its own connection; the node goes on serving
every other client, and says so in one rate-limited line, not one per frame."""

from __future__ import annotations

import datetime
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_wire import KafkaWire, encode_request
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.produce.v7.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)

from clients.record.codec import encode_batch

pytestmark = pytest.mark.e2e

MAX = 1 << 20  # the node's socket.request.max.bytes here


@pytest.fixture(scope="module")
def kafka_node(tmp_path_factory):
    from processes import NodeProcess

    n = NodeProcess(
        tmp_path_factory.mktemp("hostile") / "node1", [f"socket.request.max.bytes={MAX}"]
    ).start(timeout=90)
    yield n
    n.stop()


def still_serves(address: str) -> None:
    wire = KafkaWire(address)
    try:
        answer = wire.call(
            18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert answer.error_code == 0 and any(k.api_key == 3 for k in answer.api_keys)
    finally:
        wire.close()


def send_and_wait_close(address: str, data: bytes) -> bytes:
    """What the node answers before it closes (or, for a frame still incomplete, nothing)."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)  # an incomplete frame then ends: the node must see EOF
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        return received


def header(api_key, version, correlation=1, client_id=b"x", tags=b""):
    return struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id + tags


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


HOSTILE = {
    "over socket.request.max.bytes": struct.pack(">i", MAX + 1) + b"\x00" * 64,
    "negative size": struct.pack(">i", -1),
    "size below any header": framed(b"\x00\x03"),
    "client_id overruns": framed(struct.pack(">hhih", 3, 1, 1, 500) + b"ab"),
    "tagged fields overrun": framed(header(3, 12, tags=b"\x01\x00\x7f")),
    "4 billion topics in 5 bytes": framed(header(3, 12, tags=b"\x00") + b"\xff\xff\xff\xff\x0f"),
    "legacy array of 2^31-1": framed(header(3, 4) + struct.pack(">i", 2**31 - 1)),
    "records longer than the frame": framed(
        header(0, 7)
        + b"\xff\xff\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01t"
        + b"\x00\x00\x00\x01\x00\x00\x00\x00"
        + struct.pack(">i", 2**31 - 1)
    ),
    "unknown API key": framed(header(777, 0)),
    "unsupported version of a known API": framed(header(3, 99)),
    "ends inside a frame": struct.pack(">i", 100) + b"\x00" * 10,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_frame_closes_only_its_connection(kafka_node, name):
    assert send_and_wait_close(kafka_node.kafka_address, HOSTILE[name]) == b""
    still_serves(kafka_node.kafka_address)


def test_a_too_new_api_versions_gets_v0_with_the_ranges(kafka_node):
    answer = send_and_wait_close(kafka_node.kafka_address, framed(header(18, 77, 42)))
    (size, correlation, error, count) = struct.unpack(">iihi", answer[:14])
    assert (correlation, error) == (42, 35)  # UNSUPPORTED_VERSION, header v0
    ranges = {struct.unpack(">hhh", answer[14 + 6 * i : 20 + 6 * i])[0] for i in range(count)}
    assert {0, 1, 2, 3, 18} <= ranges and size == len(answer) - 4


def test_the_node_logs_hostile_frames_rate_limited(kafka_node):
    for _ in range(20):
        send_and_wait_close(kafka_node.kafka_address, HOSTILE["negative size"])
    still_serves(kafka_node.kafka_address)
    lines = [
        line
        for line in kafka_node.log_path.read_text().splitlines()
        if "closed the connection" in line
    ]
    assert 1 <= len(lines) <= 3, lines


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    api_key=st.sampled_from([0, 1, 2, 3, 18, 5, -1, 32767]),
    version=st.integers(-2, 20),
    client_id=st.binary(max_size=8),
    tags=st.binary(max_size=8),
    body=st.binary(max_size=40),
    size_delta=st.sampled_from([0, 0, 0, -1, 1, -8]),
)
def test_fuzzed_frames_never_take_the_node_down(
    kafka_node, api_key, version, client_id, tags, body, size_delta
):
    payload = header(api_key, version, client_id=client_id, tags=tags) + body
    data = struct.pack(">i", max(len(payload) + size_delta, -1)) + payload
    send_and_wait_close(kafka_node.kafka_address, data)
    still_serves(kafka_node.kafka_address)


def test_a_failed_acks_0_produce_closes_the_connection(kafka_node):
    """Kafka's signal to a producer that gets no answers: the internal topic refuses the
    append, so the connection closes; the same request with acks=1 gets its error instead."""

    def request(acks):
        return ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout=datetime.timedelta(seconds=5),
            topic_data=(
                TopicProduceData(
                    name="__consumer_offsets",
                    partition_data=(
                        PartitionProduceData(
                            index=0, records=encode_batch([(b"k", b"v", (), 1000)])
                        ),
                    ),
                ),
            ),
        )

    wire = KafkaWire(kafka_node.kafka_address)
    try:
        answer = wire.call(0, 7, request(1))
        assert answer.responses[0].partition_responses[0].error_code == 17  # INVALID_TOPIC
        wire.send_raw(encode_request(0, 7, request(0), 2))  # the same connection
        assert wire.read_frame() is None  # closed, no answer
    finally:
        wire.close()
    still_serves(kafka_node.kafka_address)
