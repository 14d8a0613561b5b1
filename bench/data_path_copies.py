"""Bytes the broker allocates per fetched and per produced byte (tracemalloc, over one request) and
the time per request, in a child process per source tree, interleaved --pairs times (A/B).

    python bench/data_path_copies.py --tree /path/to/main --tree . [--pairs 3] [--batch-kib 16]

In-process: a BrokerServicer over a real ReplicaManager and Log (replicas 1, 2, ISR 1, so the high
watermark follows the log end), called as the gRPC server calls it: the request parsed from its
bytes, the answer serialized (a tree with `fetch_serialized` / `produce_serialized` serves those,
the latter reading the request's bytes itself; else the message's SerializeToString). Consumer
fetch, follower fetch, and produce, each of --mib MiB in batches of --batch-kib KiB."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

_CHILD = r'''
import json, sys, tempfile, time, tracemalloc, pathlib
import trio
from broker.services.broker_servicer import BrokerServicer
from broker.replication.replica_manager import ReplicaManager
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

MIB = 1 << 20
mib = int(sys.argv[1])
batch = encode_batch([(None, b"v" * (int(sys.argv[2]) * 1024 - 80), (), 1000)])
n_batches = mib * MIB // len(batch)
produce_bytes = pb.ProduceRequest(acks=1, timeout_ms=1000, topics=[pb.TopicProduceData(
    name="t", partitions=[pb.PartitionProduceData(partition=0, records=batch * n_batches)])]
).SerializeToString()


def fetch_bytes(replica_id):
    return pb.FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1,
                           max_bytes=mib * MIB + 65536, topics=[pb.FetchTopic(
        topic="t", partitions=[pb.FetchPartition(partition=0, fetch_offset=0,
                                                 current_leader_epoch=1,
                                                 partition_max_bytes=mib * MIB + 65536)])]
    ).SerializeToString()


async def traced(call):
    """(bytes allocated in all, peak bytes held) over one call: tracemalloc's current size read
    at every Python and C call and return (sys.setprofile), growth summed. Counts what Python's
    allocator hands out; protobuf's own arena (upb) is invisible to it."""
    grown, last = 0, None

    def profile(frame, event, arg):
        nonlocal grown, last
        current = tracemalloc.get_traced_memory()[0]
        if last is not None and current > last:
            grown += current - last
        last = current

    tracemalloc.start()
    sys.setprofile(profile)
    try:
        await call()
    finally:
        sys.setprofile(None)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return grown, peak


async def main():
    config = LogConfig(max_message_bytes=64 * MIB, segment_bytes=1 << 30)
    with tempfile.TemporaryDirectory() as d:
        replicas = ReplicaManager(LogManager([pathlib.Path(d)], config, now_ms=0), node_id=1,
                                  clock_ms=lambda: 0)
        replicas.apply_registration("t", 0, "id", config, PartitionRegistration(
            replicas=(1, 2), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1), now_ms=0)
        servicer = BrokerServicer(replicas, metadata=None, channel=None, cluster_id="c",
                                  clock_ms=lambda: 0, monotonic_ms=lambda: 0)
        serialized = getattr(servicer, "fetch_serialized", None)
        produce_serialized = getattr(servicer, "produce_serialized", None)

        async def produce():
            if produce_serialized is not None:     # as the gRPC server calls it
                parse = produce_serialized.parse_request
                answer = await produce_serialized(parse(produce_bytes))
                response = pb.ProduceResponse.FromString(answer)
            else:
                response = await servicer.Produce(pb.ProduceRequest.FromString(produce_bytes))
                answer = response.SerializeToString()
            assert response.topics[0].partitions[0].error_code == 0, response
            return answer

        async def fetch(data):
            request = pb.FetchRequest.FromString(data)
            if serialized is not None:
                return await serialized(request)
            return (await servicer.Fetch(request)).SerializeToString()

        out = {}
        await produce()      # the data the fetches read; warms the code paths too
        for name, call, size in (("produce", produce, len(batch) * n_batches),
                                 ("consumer fetch", lambda: fetch(fetch_bytes(-1)), None),
                                 ("follower fetch", lambda: fetch(fetch_bytes(2)), None)):
            if size is None:
                answer = pb.FetchResponse.FromString(await call())
                size = len(answer.topics[0].partitions[0].records)
                assert size >= mib * MIB * 0.9, size
            times = []
            for _ in range(5):
                start = time.perf_counter()
                await call()
                times.append(time.perf_counter() - start)
            allocated, peak = await traced(call)
            out[name] = {"allocated_per_byte": allocated / size, "peak_per_byte": peak / size,
                         "ms": min(times) * 1000}
    print(json.dumps(out))

trio.run(main)
'''


def run(tree: pathlib.Path, mib: int, batch_kib: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(mib), str(batch_kib)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=pathlib.Path, required=True)
    parser.add_argument("--mib", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--batch-kib", type=int, default=16)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {str(t): [] for t in args.tree}
    for _ in range(args.pairs):
        for tree in args.tree:
            results[str(tree)].append(run(tree, args.mib, args.batch_kib))
    print(
        f"{'tree':<24} {'path':<16} {'allocated / byte':>17} {'peak / byte':>12} "
        f"{'ms / request':>13}"
    )
    for tree, runs in results.items():
        for path in runs[0]:
            allocated, peak, ms = (
                statistics.median(r[path][k] for r in runs)
                for k in ("allocated_per_byte", "peak_per_byte", "ms")
            )
            print(f"{tree[-24:]:<24} {path:<16} {allocated:>17.2f} {peak:>12.2f} {ms:>13.2f}")
    if len(args.tree) == 2:
        a, b = (results[str(t)] for t in args.tree)
        for path in a[0]:
            ratio = statistics.median(y[path]["ms"] / x[path]["ms"] for x, y in zip(a, b))
            print(f"B/A time, {path}: {ratio:.2f} (median of pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
