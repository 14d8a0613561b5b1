"""The request path's share of the metrics: one Produce answer through the interceptor's
wrapper (timing, parsing the answer's error codes, RequestStats) against the bare handler, in
µs per call, on grpcio's asyncio loop as a node runs it; and one render of a registry.

    python bench/metrics_interceptor_cost.py [--calls 100000] [--partitions 1]
"""
from __future__ import annotations

import argparse
import asyncio
import time

import grpc

from broker.metrics.endpoint import NodeMetrics
from broker.metrics.interceptor import RequestMetricsInterceptor
from clients.wire import broker_pb2 as bpb


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
    args = ap.parse_args()
    answer = bpb.ProduceResponse(topics=[bpb.TopicProduceResponse(name="bench", partitions=[
        bpb.PartitionProduceResponse(partition=p, base_offset=1000) for p in
        range(args.partitions)])]).SerializeToString()

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
    print(f"Produce answer with {args.partitions} partition(s): bare {bare * 1e6:.2f} µs, "
          f"through the interceptor {wrapped * 1e6:.2f} µs: +{(wrapped - bare) * 1e6:.2f} µs "
          f"per request")
    start = time.perf_counter()
    for _ in range(100):
        metrics.render()
    print(f"render of a registry with one API's counters: "
          f"{(time.perf_counter() - start) / 100 * 1000:.2f} ms")


if __name__ == "__main__":
    main()
