"""The request path's share of the metrics: one Produce answer through the interceptor's
wrapper (timing, parsing the answer's error codes, RequestStats) against the bare handler, in
µs per call, on an asyncio loop; then whole gRPC calls to two TrioGrpcServers of this process
(one with the interceptor, one without; a raw Produce handler answering at once), in
alternating rounds, so grpcio's own interceptor chain counts too; and one render of a registry.

    python bench/metrics_interceptor_cost.py [--calls 100000] [--partitions 1] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time

import grpc
import trio

from broker.metrics.endpoint import NodeMetrics
from broker.metrics.interceptor import RequestMetricsInterceptor
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2 as bpb
from clients.wire import broker_pb2_grpc


class Details:
    method = "/kraft.broker.v1.Broker/Produce"


class Context:
    def code(self):
        return None

    def details(self):
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10, help="alternating rounds of gRPC calls")
    ap.add_argument("--round-calls", type=int, default=2000)
    args = ap.parse_args()
    answer = bpb.ProduceResponse(
        topics=[
            bpb.TopicProduceResponse(
                name="bench",
                partitions=[
                    bpb.PartitionProduceResponse(partition=p, base_offset=1000)
                    for p in range(args.partitions)
                ],
            )
        ]
    ).SerializeToString()

    async def produce(request, context):
        return answer

    metrics = NodeMetrics(1, ("broker",))
    interceptor = RequestMetricsInterceptor(metrics.requests, "PLAINTEXT")

    async def continuation(details):
        return grpc.unary_unary_rpc_method_handler(produce)

    async def run() -> tuple[float, float]:
        wrapped = (await interceptor.intercept_service(continuation, Details())).unary_unary
        context = Context()
        best = {}
        for _ in range(3):
            for name, handler in (("bare", produce), ("wrapped", wrapped)):
                start = time.perf_counter()
                for _ in range(args.calls):
                    await handler(b"", context)
                per = (time.perf_counter() - start) / args.calls
                best[name] = min(best.get(name, 1.0), per)
        return best["bare"], best["wrapped"]

    bare, wrapped = asyncio.run(run())
    print(
        f"Produce answer with {args.partitions} partition(s): bare {bare * 1e6:.2f} µs, "
        f"through the interceptor {wrapped * 1e6:.2f} µs: +{(wrapped - bare) * 1e6:.2f} µs "
        f"per request"
    )
    with_ms, without_ms = grpc_calls(answer, args.rounds, args.round_calls)
    print(
        f"whole gRPC Produce calls, {args.rounds} alternating rounds of {args.round_calls}: "
        f"without {statistics.median(without_ms):.1f} µs, with the interceptor "
        f"{statistics.median(with_ms):.1f} µs (medians of rounds): "
        f"+{statistics.median(with_ms) - statistics.median(without_ms):.1f} µs per call"
    )
    start = time.perf_counter()
    for _ in range(100):
        metrics.render()
    print(
        f"render of a registry with one API's counters: "
        f"{(time.perf_counter() - start) / 100 * 1000:.2f} ms"
    )


def grpc_calls(answer: bytes, rounds: int, calls: int) -> tuple[list[float], list[float]]:
    """µs per serial call in each round, to the server with the interceptor and without."""
    ports: dict[str, int] = {}
    up = threading.Event()
    stop: list = []

    async def produce(request):
        return answer

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            stop.append((trio.lowlevel.current_trio_token(), nursery.cancel_scope))
            for name, interceptors in (
                (
                    "with",
                    (RequestMetricsInterceptor(NodeMetrics(1, ("broker",)).requests, "PLAINTEXT"),),
                ),
                ("without", ()),
            ):
                server = TrioGrpcServer("127.0.0.1:0", interceptors=interceptors)
                server.add_servicer(None, bpb, "Broker", {"Produce": produce}, only=("Produce",))
                ports[name] = await nursery.start(server.serve)
            up.set()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    up.wait(30)
    request = bpb.ProduceRequest(acks=1, timeout_ms=1000)
    out: dict[str, list[float]] = {"with": [], "without": []}
    channels = {n: grpc.insecure_channel(f"127.0.0.1:{p}") for n, p in ports.items()}
    stubs = {n: broker_pb2_grpc.BrokerStub(c) for n, c in channels.items()}
    for stub in stubs.values():
        for _ in range(200):
            stub.Produce(request)  # warm up both
    for i in range(rounds):
        for name in ("with", "without") if i % 2 == 0 else ("without", "with"):
            start = time.perf_counter()
            for _ in range(calls):
                stubs[name].Produce(request)
            out[name].append((time.perf_counter() - start) / calls * 1e6)
    for channel in channels.values():
        channel.close()
    token, scope = stop[0]
    token.run_sync_soon(scope.cancel)
    thread.join(10)
    return out["with"], out["without"]


if __name__ == "__main__":
    main()
