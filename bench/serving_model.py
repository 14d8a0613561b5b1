"""The serving model, measured: a toy Broker service (Metadata answers at once, Fetch parks until
its max_wait_ms) served by grpcio's thread-pool server bridged into trio (one worker thread per
call) and by grpcio's asyncio server bridged into trio (clients.grpc_server). Prints the
Metadata round trip p50/p99 with 0, 100 and 1,000 parked fetches, and serial calls per second.

    python bench/serving_model.py [--parked 0,100,1000] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import trio

from clients.bridge import CHANNEL_OPTIONS
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc


class ToyBroker:
    async def Metadata(self, request):
        return pb.MetadataResponse(cluster_id="bench")

    async def Fetch(self, request):
        await trio.sleep(request.max_wait_ms / 1000)
        return pb.FetchResponse()

    def __getattr__(self, name):  # the other Broker methods: unused here
        async def unused(request):
            raise NotImplementedError(name)

        return unused


def _thread_pool_server(token, servicer):
    """The model main had: grpcio's sync server, each call hopping into trio from a worker."""

    def bridge(name):
        handler = getattr(servicer, name)
        return staticmethod(
            lambda request, context: trio.from_thread.run(handler, request, trio_token=token)
        )

    names = pb.DESCRIPTOR.services_by_name["Broker"].methods_by_name
    shim = type("Shim", (), {n: bridge(n) for n in names})
    server = grpc.server(ThreadPoolExecutor(max_workers=64), options=CHANNEL_OPTIONS)
    broker_pb2_grpc.add_BrokerServicer_to_server(shim(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def measure(port: int, parked: int, calls: int) -> dict:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS)
    stub = broker_pb2_grpc.BrokerStub(channel)
    futures = [
        stub.Fetch.future(pb.FetchRequest(max_wait_ms=60_000), timeout=120) for _ in range(parked)
    ]
    time.sleep(1.0 + parked / 1000)  # let them reach the server and park
    times = []
    start = time.perf_counter()
    for _ in range(calls):
        t0 = time.perf_counter()
        try:
            stub.Metadata(pb.MetadataRequest(), timeout=10)
        except grpc.RpcError as exc:  # every worker thread is parked: give up, say so
            for f in futures:
                f.cancel()
            channel.close()
            return {"parked": parked, "metadata": f"no answer within 10 s ({exc.code().name})"}
        times.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - start
    for f in futures:
        f.cancel()
    channel.close()
    times.sort()
    return {
        "parked": parked,
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
        "calls_per_s": round(calls / elapsed),
    }


async def run(model: str, parked_counts: list[int], calls: int) -> list[dict]:
    servicer = ToyBroker()
    results = []
    async with trio.open_nursery() as nursery:
        if model == "aio":
            server = TrioGrpcServer("127.0.0.1:0")
            server.add_servicer(servicer, pb, "Broker")
            port = await nursery.start(server.serve)
        else:
            sync_server, port = _thread_pool_server(trio.lowlevel.current_trio_token(), servicer)
        for parked in parked_counts:
            result = await trio.to_thread.run_sync(measure, port, parked, calls)
            results.append({"model": model, **result})
            await trio.sleep(0.5)
        if model != "aio":
            await trio.to_thread.run_sync(lambda: sync_server.stop(0).wait())
        nursery.cancel_scope.cancel()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parked", default="0,100,1000")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--models", default="threads,aio")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.parked.split(",")]
    for model in args.models.split(","):
        for row in trio.run(run, model, counts, args.calls):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
