"""The interceptor on a real TrioGrpcServer: answers count their codes, a handler's failure
counts UNKNOWN_SERVER_ERROR and an unparsable request INVALID_ARGUMENT, per listener; a request
parked in the purgatory has that time as its remote time."""

from __future__ import annotations

import grpc
import pytest
import trio

from broker.metrics import interceptor
from broker.metrics.interceptor import SCAN_ABOVE_BYTES, RequestMetricsInterceptor
from broker.metrics.request_stats import RequestStats
from broker.metrics.wire_codes import wire_error_counts
from broker.replication.purgatory import Purgatory
from clients.bridge import CHANNEL_OPTIONS
from clients.errors import ErrorCode as E
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as pb


class Servicer:
    def __init__(self) -> None:
        self.purgatory = Purgatory()

    async def Fetch(self, request):
        # Two waits side by side (a Produce parks per partition): their time counts once.
        async with trio.open_nursery() as nursery:
            for partition in (0, 1):
                nursery.start_soon(
                    self.purgatory.wait_moved, [("t", partition)], trio.current_time() + 0.2
                )
        return pb.FetchResponse()

    async def Metadata(self, request):
        return pb.MetadataResponse(
            cluster_id="c",
            topics=[pb.TopicMetadata(name="t", error_code=E.UNKNOWN_TOPIC_OR_PARTITION)],
        )

    async def ListOffsets(self, request):
        raise RuntimeError("a bug")


def call(port: int, method: str, data: bytes) -> grpc.StatusCode:
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS) as channel:
        try:
            channel.unary_unary(f"/kraft.broker.v1.Broker/{method}")(data, timeout=5)
            return grpc.StatusCode.OK
        except grpc.RpcError as exc:
            return exc.code()


async def test_answers_failures_and_bad_requests_are_counted_at_the_interceptor():
    stats = RequestStats()
    server = TrioGrpcServer(
        "127.0.0.1:0", listener_name="SSL", interceptors=(RequestMetricsInterceptor(stats, "SSL"),)
    )
    server.add_servicer(Servicer(), pb, "Broker", only=("Metadata", "ListOffsets", "Fetch"))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        for method, data, code in (
            ("Metadata", pb.MetadataRequest().SerializeToString(), grpc.StatusCode.OK),
            ("ListOffsets", b"", grpc.StatusCode.INTERNAL),
            ("Metadata", b"\xff\xff\xff", grpc.StatusCode.INVALID_ARGUMENT),
            ("Fetch", b"", grpc.StatusCode.OK),
            ("Produce", b"", grpc.StatusCode.UNIMPLEMENTED),
        ):
            assert await trio.to_thread.run_sync(call, port, method, data) == code
        nursery.cancel_scope.cancel()
    assert stats.requests == {
        ("Metadata", "SSL"): 2,
        ("ListOffsets", "SSL"): 1,
        ("Fetch", "SSL"): 1,
    }
    assert stats.errors == {
        ("Metadata", "SSL", "UNKNOWN_TOPIC_OR_PARTITION"): 1,
        ("Metadata", "SSL", "INVALID_ARGUMENT"): 1,
        ("ListOffsets", "SSL", "UNKNOWN_SERVER_ERROR"): 1,
        ("Fetch", "SSL", "NONE"): 1,
    }
    [(_, total, _)] = [stats.total_time[("Fetch", "SSL")].snapshot()]
    [(_, remote, _)] = [stats.remote_time[("Fetch", "SSL")].snapshot()]
    [(_, local, _)] = [stats.local_time[("Fetch", "SSL")].snapshot()]
    [(_, queue, _)] = [stats.queue_time[("Fetch", "SSL")].snapshot()]
    assert 0.19 < remote < 0.3 and remote <= total  # once, not 0.4
    assert queue + remote + local == pytest.approx(total)
    assert stats.remote_time[("Metadata", "SSL")].snapshot()[1] < 0.05


async def test_a_large_answer_is_read_off_its_bytes(monkeypatch):
    scanned = []

    def spy(data, plan):
        scanned.append(len(data))
        return wire_error_counts(data, plan)

    monkeypatch.setattr(interceptor, "wire_error_counts", spy)
    big = (
        pb.FetchResponse(error_code=E.UNKNOWN_SERVER_ERROR).SerializeToString()
        + pb.FetchResponse(error_message="x" * (SCAN_ABOVE_BYTES + 1)).SerializeToString()
    )

    async def fetch(request):
        return big

    stats = RequestStats()
    server = TrioGrpcServer("127.0.0.1:0", interceptors=(RequestMetricsInterceptor(stats, "P"),))
    server.add_servicer(None, pb, "Broker", {"Fetch": fetch}, only=("Fetch",))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        assert await trio.to_thread.run_sync(call, port, "Fetch", b"") == grpc.StatusCode.OK
        nursery.cancel_scope.cancel()
    assert stats.errors == {("Fetch", "P", "UNKNOWN_SERVER_ERROR"): 1}
    assert scanned == [len(big)]
