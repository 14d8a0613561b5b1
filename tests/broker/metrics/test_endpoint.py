"""The metrics endpoint: GET /metrics answers the node's own registry as Prometheus text, other
paths and methods are refused, and a port in use is an error naming metrics.listener."""

from __future__ import annotations

import socket

import pytest
import trio

from broker.metrics.endpoint import NodeMetrics
from broker.server.config import ServerConfigError, build_config
from clients.metrics_view import parse


async def http(port: int, request: bytes) -> tuple[bytes, bytes]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        answer = b""
        while chunk := await stream.receive_some(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


async def test_get_metrics_answers_this_nodes_registry_only():
    one, two = NodeMetrics(1, ("broker",)), NodeMetrics(2, ("controller",))
    one.observe_request("Produce", "PLAINTEXT", 0, 0.002)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(one.serve, "127.0.0.1", 0)
        await nursery.start(two.serve, "127.0.0.1", 0)
        head, body = await http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"text/plain" in head
        samples = parse(body.decode())
        assert samples["kafka_server_app_info"] == [({"node_id": "1", "roles": "broker"}, 1.0)]
        assert samples["kafka_network_requestmetrics_requests_total"] == [
            ({"request": "Produce", "listener": "PLAINTEXT"}, 1.0)
        ]
        assert "process_resident_memory_bytes" in samples and "process_open_fds" in samples
        assert (await http(port, b"GET /other HTTP/1.1\r\n\r\n"))[0].startswith(b"HTTP/1.1 404")
        assert (await http(port, b"POST /metrics HTTP/1.1\r\n\r\n"))[0].startswith(b"HTTP/1.1 405")
        assert one.scrapes == 1
        nursery.cancel_scope.cancel()


class Broken:
    def collect(self):
        raise RuntimeError("a collector's bug")


async def test_a_failing_collector_answers_500_and_the_endpoint_stays_up(caplog):
    metrics = NodeMetrics(1, ("broker",))
    metrics.add(Broken())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(metrics.serve, "127.0.0.1", 0)
        for _ in range(2):
            head, body = await http(port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 500") and b"a collector's bug" in body
        nursery.cancel_scope.cancel()
    assert "a scrape failed" in caplog.text


async def test_a_port_in_use_names_the_key():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="metrics.listener: cannot listen on 127.0.0.1:"):
            await NodeMetrics(1, ("broker",)).serve("127.0.0.1", taken.getsockname()[1])


@pytest.mark.parametrize(
    "value, expected",
    [
        ("http://127.0.0.1:9404", ("127.0.0.1", 9404)),
        ("http://0.0.0.0:0", ("0.0.0.0", 0)),
        ("http://[::1]:9404", ("::1", 9404)),
        ("", None),
    ],
)
def test_metrics_listener_values(value, expected):
    assert build_config({"metrics.listener": value}).metrics_listener == expected


def test_metrics_listener_is_off_unless_set():
    assert build_config({}).metrics_listener is None


@pytest.mark.parametrize(
    "value, message",
    [
        ("127.0.0.1:9404", "is not http://host:port"),
        ("https://127.0.0.1:9404", "plain HTTP only"),
        ("http://127.0.0.1", "is not http://host:port"),
        ("http://127.0.0.1:99999", "out of range"),
        ("http://:9404", "is not http://host:port"),
    ],
)
def test_an_unusable_metrics_listener_names_its_key(value, message):
    with pytest.raises(ServerConfigError, match=f"^metrics.listener: .*{message}"):
        build_config({"metrics.listener": value})
