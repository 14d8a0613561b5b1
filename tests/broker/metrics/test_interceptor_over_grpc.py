"""The interceptor on a real TrioGrpcServer: answers count their codes, a handler's failure
counts UNKNOWN_SERVER_ERROR and an unparsable request INVALID_ARGUMENT, per listener."""
from __future__ import annotations

import grpc
import trio

from broker.metrics.interceptor import RequestMetricsInterceptor
from broker.metrics.request_stats import RequestStats
from clients.bridge import CHANNEL_OPTIONS
from clients.errors import ErrorCode as E
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as pb


class Servicer:
    async def Metadata(self, request):
        return pb.MetadataResponse(cluster_id="c", topics=[
            pb.TopicMetadata(name="t", error_code=E.UNKNOWN_TOPIC_OR_PARTITION)])

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
    server = TrioGrpcServer("127.0.0.1:0", listener_name="SSL",
                            interceptors=(RequestMetricsInterceptor(stats, "SSL"),))
    server.add_servicer(Servicer(), pb, "Broker", only=("Metadata", "ListOffsets"))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        for method, data, code in (
                ("Metadata", pb.MetadataRequest().SerializeToString(), grpc.StatusCode.OK),
                ("ListOffsets", b"", grpc.StatusCode.INTERNAL),
                ("Metadata", b"\xff\xff\xff", grpc.StatusCode.INVALID_ARGUMENT),
                ("Fetch", b"", grpc.StatusCode.UNIMPLEMENTED)):
            assert await trio.to_thread.run_sync(call, port, method, data) == code
        nursery.cancel_scope.cancel()
    assert stats.requests == {("Metadata", "SSL"): 2, ("ListOffsets", "SSL"): 1}
    assert stats.errors == {("Metadata", "SSL", "UNKNOWN_TOPIC_OR_PARTITION"): 1,
                            ("Metadata", "SSL", "INVALID_ARGUMENT"): 1,
                            ("ListOffsets", "SSL", "UNKNOWN_SERVER_ERROR"): 1}
