"""A node's metrics: its own CollectorRegistry (tests run several nodes in one process, and the
global registry would mix them) and the HTTP endpoint serving it as Prometheus text, a task of
the node's trio loop.

Why a trio task and not prometheus_client's server thread: the collectors read state that the
loop owns (partitions, purgatory, coordinators, the Raft core), which a thread could see half
changed (a dict resized mid-iteration); on the loop a scrape sees one consistent moment, with no
lock on any hot path. The cost is the loop's time for a scrape (BENCHMARKS.md measures it), and
a loop that is stuck answers no scrape, but such a node answers no request either."""

from __future__ import annotations

import logging
import time

import trio
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from broker.metrics.collectors import RequestCollector
from broker.metrics.request_stats import RequestStats

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 8192
READ_TIMEOUT_S = 5.0


class NodeMetrics:
    """What a node counts (`requests`, which every listener reports to) and the registry its
    collectors join as the node's parts start."""

    def __init__(self, node_id: int, roles: tuple[str, ...]) -> None:
        self.registry = CollectorRegistry()
        self.requests = RequestStats()
        self.registry.register(_NodeInfo(node_id, roles))
        self.registry.register(RequestCollector(self.requests))
        # RSS, open file descriptors, CPU seconds: the process's, from /proc.
        ProcessCollector(registry=self.registry)
        self.scrapes = 0
        self.last_scrape_s = 0.0

    def observe_request(
        self,
        api: str,
        listener: str,
        error_code,
        seconds: float,
        *,
        queue_s: float | None = None,
        remote_s: float | None = None,
    ) -> None:
        """For a listener that is not gRPC (RequestStats.observe_request says the arguments).
        Such a listener can have the purgatory measure remote time too: clients.request_times
        (measure_request in the request's trio task)."""
        self.requests.observe_request(
            api, listener, error_code, seconds, queue_s=queue_s, remote_s=remote_s
        )

    def add(self, collector) -> None:
        self.registry.register(collector)

    def render(self) -> bytes:
        start = time.perf_counter()
        text = generate_latest(self.registry)
        self.scrapes += 1
        self.last_scrape_s = time.perf_counter() - start
        return text

    async def serve(self, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Answer GET /metrics (and GET /) on host:port until cancelled; `started(port)`."""
        try:
            listeners = await trio.open_tcp_listeners(port, host=host)
        except OSError as exc:
            raise OSError(
                f"metrics.listener: cannot listen on {host}:{port} ({exc.strerror}); "
                "free the port or choose another"
            ) from None
        bound = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started(bound)
            await trio.serve_listeners(self._answer, listeners, handler_nursery=nursery)

    async def _answer(self, stream: trio.SocketStream) -> None:
        async with stream:
            request = b""
            with trio.move_on_after(READ_TIMEOUT_S):
                while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST_BYTES:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        break
                    request += chunk
            method, _, rest = request.partition(b" ")
            path = rest.partition(b" ")[0].partition(b"?")[0]
            try:
                if method != b"GET":
                    await _send(stream, 405, b"text/plain", b"only GET\n")
                elif path in (b"/metrics", b"/"):
                    try:
                        body = self.render()
                    except Exception as exc:  # noqa: BLE001 - a collector's bug must not stop the node
                        log.error(
                            "metrics: a scrape failed; answered 500",
                            exc_info=(type(exc), exc, exc.__traceback__),
                        )
                        await _send(
                            stream,
                            500,
                            b"text/plain",
                            f"the scrape failed ({type(exc).__name__}: {exc}); "
                            "the node logged the details\n".encode(),
                        )
                    else:
                        await _send(stream, 200, CONTENT_TYPE_LATEST.encode(), body)
                else:
                    await _send(stream, 404, b"text/plain", b"the metrics are at /metrics\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the scraper went away


class _NodeInfo:
    """Kafka's app-info MBean: which node answers (kraft top names rows by it)."""

    def __init__(self, node_id: int, roles: tuple[str, ...]) -> None:
        self.labels = [str(node_id), ",".join(roles)]

    def collect(self):
        info = GaugeMetricFamily(
            "kafka_server_app_info",
            "1; the labels say which node this is",
            labels=["node_id", "roles"],
        )
        info.add_metric(self.labels, 1)
        return [info]


_REASONS = {
    200: b"OK",
    404: b"Not Found",
    405: b"Method Not Allowed",
    500: b"Internal Server Error",
}


async def _send(stream: trio.SocketStream, status: int, content_type: bytes, body: bytes) -> None:
    head = (
        b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
        % (status, _REASONS[status], content_type, len(body))
    )
    await stream.send_all(head + body)
