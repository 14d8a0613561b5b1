"""clients.channel_thread over real gRPC: a channel from `open_channel` keeps one completion
thread across sequential calls (grpcio starts one per call otherwise), `close()` (or leaving a
`with` block) ends it whether the channel is idle or has calls in flight, and a closed channel's
calls fail as grpcio's do."""

from __future__ import annotations

import threading

import grpc
import pytest
import trio

from clients import bridge, channel_thread
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as pb


class Servicer:
    def __init__(self) -> None:
        self.release = trio.Event()

    async def Metadata(self, request):
        if request.topics == ["park"]:
            await self.release.wait()
        return pb.MetadataResponse(cluster_id="c")

    def __getattr__(self, name):
        async def unused(request):
            raise NotImplementedError(name)

        return unused


def _calls_in_sequence(channel: grpc.Channel, n: int) -> set[str]:
    """n calls one after another through future(), as the clients make them; returns the names
    of the threads their done-callbacks ran on."""
    method = channel.unary_unary(
        "/kraft.broker.v1.Broker/Metadata",
        request_serializer=pb.MetadataRequest.SerializeToString,
        response_deserializer=pb.MetadataResponse.FromString,
    )
    seen: set[str] = set()
    for _ in range(n):
        done = threading.Event()
        future = method.future(pb.MetadataRequest(), timeout=5)
        future.add_done_callback(lambda _f: (seen.add(threading.current_thread().name), done.set()))
        assert done.wait(5)
        assert future.result().cluster_id == "c"
    return seen


@pytest.mark.skipif(not channel_thread.supported(), reason="this grpcio lacks the hook")
async def test_a_channel_keeps_one_completion_thread_until_closed():
    servicer = Servicer()
    server = TrioGrpcServer("127.0.0.1:0")
    server.add_servicer(servicer, pb, "Broker")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        address = f"127.0.0.1:{port}"

        plain = grpc.insecure_channel(address, options=bridge.CHANNEL_OPTIONS)
        assert len(await trio.to_thread.run_sync(_calls_in_sequence, plain, 20)) > 1
        plain.close()

        kept = bridge.open_channel(address)
        names = await trio.to_thread.run_sync(_calls_in_sequence, kept, 20)
        assert len(names) == 1  # one thread served all 20
        thread = kept._call_state.kraft_thread
        assert thread is not None and thread.is_alive()
        await trio.to_thread.run_sync(kept.close)  # idle: close wakes the thread to end it
        await trio.to_thread.run_sync(thread.join, 5)
        assert not thread.is_alive()
        with pytest.raises(ValueError):
            kept.unary_unary("/kraft.broker.v1.Broker/Metadata").future(b"")

        with bridge.open_channel(address) as scoped:  # `with` closes it the same way
            await trio.to_thread.run_sync(_calls_in_sequence, scoped, 2)
            thread = scoped._call_state.kraft_thread
        await trio.to_thread.run_sync(thread.join, 5)
        assert not thread.is_alive()

        busy = bridge.open_channel(address)
        await trio.to_thread.run_sync(_calls_in_sequence, busy, 2)
        parked = busy.unary_unary(
            "/kraft.broker.v1.Broker/Metadata",
            request_serializer=pb.MetadataRequest.SerializeToString,
        ).future(pb.MetadataRequest(topics=["park"]), timeout=30)
        thread = busy._call_state.kraft_thread
        await trio.to_thread.run_sync(busy.close)  # a call in flight: close cancels it
        await trio.to_thread.run_sync(thread.join, 5)
        assert not thread.is_alive()
        assert parked.cancelled() or parked.exception().code() == grpc.StatusCode.CANCELLED
        assert channel_thread.unwoken_closes == 0  # every close woke its thread first
        servicer.release.set()
        await server.stop()
