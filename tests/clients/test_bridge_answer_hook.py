"""bridge.start's `on_answer` hook over real gRPC: it runs in grpcio's callback thread with the
answer before the trio side wakes, and what it returns is the call's `taken`; a hook that raises,
or a call that fails, leaves the answer to the trio side (taken None) with nothing lost."""

from __future__ import annotations

import logging
import threading

import pytest
import trio

from clients import bridge
from clients.errors import KraftError
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc


class Servicer:
    async def Metadata(self, request):
        if request.topics == ["fail"]:
            raise RuntimeError("refused")
        return pb.MetadataResponse(cluster_id="c")

    def __getattr__(self, name):
        async def unused(request):
            raise NotImplementedError(name)

        return unused


async def test_the_answer_hook_runs_in_grpcs_thread_and_falls_back_to_trio(caplog):
    server = TrioGrpcServer("127.0.0.1:0")
    server.add_servicer(Servicer(), pb, "Broker")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        channel = bridge.open_channel(f"127.0.0.1:{port}")
        stub = broker_pb2_grpc.BrokerStub(channel)
        seen = []

        def hook(resp):
            seen.append((threading.current_thread() is threading.main_thread(), resp.cluster_id))
            return "mine"

        pending = bridge.start(stub.Metadata, pb.MetadataRequest(), 5, hook)
        resp = await bridge.finish(pending)
        assert resp.cluster_id == "c" and pending.taken == "mine"
        assert seen == [(False, "c")]  # not the trio (main) thread

        def broken(resp):
            raise ValueError("a bug in the hook")

        with caplog.at_level(logging.ERROR, logger="clients.bridge"):
            pending = bridge.start(stub.Metadata, pb.MetadataRequest(), 5, broken)
            resp = await bridge.finish(pending)
        assert resp.cluster_id == "c" and pending.taken is None
        assert any("answer hook" in r.message for r in caplog.records)

        pending = bridge.start(stub.Metadata, pb.MetadataRequest(topics=["fail"]), 5, hook)
        with pytest.raises(KraftError):
            await bridge.finish(pending)
        assert pending.taken is None and len(seen) == 1  # a failed call never reaches the hook
        channel.close()
        await server.stop()
