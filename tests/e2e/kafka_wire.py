"""A raw Kafka wire client for the tests (blocking sockets): a request encoded by kio with its
header, the answer's body decoded by kio. For what no client library sends: hostile frames,
a Fetch read byte for byte."""

from __future__ import annotations

import io
import socket
import struct

from kio.serial import entity_reader, entity_writer

from broker.kafka.apis import header_versions
from broker.kafka.codec import _entity


def encode_request(
    api_key: int, version: int, request, correlation_id: int = 1, client_id: str = "kraft-test"
) -> bytes:
    body = io.BytesIO()
    entity_writer(type(request))(body, request)
    head = (
        struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id.encode()
    )
    if header_versions(api_key, version)[0] >= 2:
        head += b"\x00"
    payload = head + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


class KafkaWire:
    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """One answer frame (after its size), or None if the broker closed the connection."""
        prefix = self._exactly(4)
        if prefix is None:
            return None
        return self._exactly(struct.unpack(">i", prefix)[0])

    def call(self, api_key: int, version: int, request, correlation_id: int = 1):
        self.send_raw(encode_request(api_key, version, request, correlation_id))
        frame = self.read_frame()
        assert frame is not None, "the broker closed the connection"
        (cid,) = struct.unpack(">i", frame[:4])
        assert cid == correlation_id
        skip = 4 + (1 if header_versions(api_key, version)[1] >= 1 else 0)
        answer, _ = entity_reader(_entity(api_key, version, "response"))(frame[skip:], 0)
        return answer

    def closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (TimeoutError, ConnectionResetError):
            return False

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data
