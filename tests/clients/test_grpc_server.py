"""clients.grpc_server over real gRPC: a handler sees who sent its request; a request that does
not parse is refused with INVALID_ARGUMENT and one log line however many arrive; a handler that
raises answers an error naming UNKNOWN_SERVER_ERROR instead of hanging or killing the server."""

from __future__ import annotations

import logging
import threading

import grpc
import trio

from clients.bridge import CHANNEL_OPTIONS
from clients.grpc_server import TrioGrpcServer, peer_host, request_context, shared_aio_loop
from clients.wire import broker_pb2 as pb


class Servicer:
    def __init__(self) -> None:
        self.seen = []

    async def Metadata(self, request):
        self.seen.append(request_context())
        return pb.MetadataResponse(cluster_id="c")

    async def Produce(self, request):
        raise RuntimeError("a bug")

    def __getattr__(self, name):
        async def unused(request):
            raise NotImplementedError(name)

        return unused


def _raw_call(port: int, method: str, data: bytes):
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS) as channel:
        call = channel.unary_unary(f"/kraft.broker.v1.Broker/{method}")
        try:
            return call(data, timeout=5), None
        except grpc.RpcError as exc:
            return None, exc


async def test_requests_carry_their_sender_and_bad_ones_get_errors_not_tracebacks(caplog):
    servicer = Servicer()
    server = TrioGrpcServer("127.0.0.1:0", listener_name="PLAINTEXT")
    server.add_servicer(servicer, pb, "Broker")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        ok, _ = await trio.to_thread.run_sync(
            _raw_call, port, "Metadata", pb.MetadataRequest().SerializeToString()
        )
        assert pb.MetadataResponse.FromString(ok).cluster_id == "c"
        [who] = servicer.seen
        assert who.principal == "User:ANONYMOUS" and who.host == "127.0.0.1"
        assert who.listener == "PLAINTEXT"
        assert request_context().host == ""  # outside a request: nobody

        with caplog.at_level(logging.WARNING, logger="clients.grpc_server"):
            for _ in range(20):
                _, error = await trio.to_thread.run_sync(
                    _raw_call, port, "Metadata", b"\xff\xff\xff"
                )
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "not a valid MetadataRequest" in error.details()
        assert len([r for r in caplog.records if "does not parse" in r.message]) == 1

        _, error = await trio.to_thread.run_sync(
            _raw_call, port, "Produce", pb.ProduceRequest().SerializeToString()
        )
        assert error.code() == grpc.StatusCode.INTERNAL
        assert error.details().startswith("UNKNOWN_SERVER_ERROR") and "a bug" in error.details()
        ok, _ = await trio.to_thread.run_sync(_raw_call, port, "Metadata", b"")
        assert ok is not None  # still serving
        await server.stop()


def test_peer_host_reads_grpc_peer_strings():
    assert peer_host("ipv4:10.0.0.1:5000") == "10.0.0.1"
    assert peer_host("ipv6:[::1]:5000") == "::1"
    assert peer_host("unix:/tmp/s") == "/tmp/s"


async def test_every_server_of_a_process_serves_from_one_asyncio_thread():
    # grpcio's asyncio stack has one completion queue per process, bound to the first loop that
    # used it: servers on separate loops paid a thread hop per completion, and a server started
    # after the first loop stopped would wait on a queue nobody polled.
    first = TrioGrpcServer("127.0.0.1:0")
    first.add_servicer(Servicer(), pb, "Broker")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(first.serve)
        ok, _ = await trio.to_thread.run_sync(_raw_call, port, "Metadata", b"")
        assert ok is not None
        await first.stop()
    a, b = TrioGrpcServer("127.0.0.1:0"), TrioGrpcServer("127.0.0.1:0")
    for server in (a, b):
        server.add_servicer(Servicer(), pb, "Broker")
    async with trio.open_nursery() as nursery:
        ports = [await nursery.start(s.serve) for s in (a, b)]
        for port in ports:  # served, although the loop that first used grpcio's queue stopped
            ok, error = await trio.to_thread.run_sync(_raw_call, port, "Metadata", b"")
            assert error is None and pb.MetadataResponse.FromString(ok).cluster_id == "c"
        assert a._loop is b._loop is first._loop is shared_aio_loop()
        threads = [t for t in threading.enumerate() if t.name == "grpc-aio"]
        assert len(threads) == 1
        await a.stop()
        await b.stop()
