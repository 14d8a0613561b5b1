"""Client throughput against the in-memory fake broker (run in its own process, like a real
broker on the other core): producer and consumer records/s, blocking facades and trio APIs.

    /work/venv/bin/python bench/client_fake_broker.py [--records 300000] [--size 100]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from clients.consumer import AsyncConsumer, Consumer  # noqa: E402
from clients.producer import AsyncProducer, Producer  # noqa: E402
from clients.types import TopicPartition  # noqa: E402


def start_fake_broker() -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/clients/test_cluster_fakebroker.py")],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    port = int(proc.stdout.readline())
    return proc, f"127.0.0.1:{port}"


def bench_producer(address: str, topic: str, n: int, value: bytes, **kw) -> float:
    with Producer(address, **kw) as p:
        p.send(topic, value).result()  # metadata and connection warm-up
        start = time.perf_counter()
        send = p.send
        for _ in range(n):
            f = send(topic, value)
        p.flush()
        elapsed = time.perf_counter() - start
        f.result()
    return n / elapsed


def bench_consumer(address: str, topic: str, n: int) -> float:
    with Consumer(address, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        got = len(c.poll(timeout_ms=5000))
        start = time.perf_counter()
        while got < n:
            records = c.poll(timeout_ms=5000)
            if not records:
                raise SystemExit(f"consumer stalled at {got} of {n}")
            got += len(records)
        return got / (time.perf_counter() - start)


async def bench_async(address: str, topic: str, n: int, value: bytes) -> tuple[float, float]:
    async with AsyncProducer(address) as p:
        await p.send_and_wait(topic, value)
        start = time.perf_counter()
        for i in range(n):
            p.send_nowait(topic, value)
            if i % 5000 == 0:
                await trio.sleep(0)  # let the sender run: send_nowait() never yields
        await p.flush()
        produce_rate = n / (time.perf_counter() - start)
    async with AsyncConsumer(address, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        got = len(await c.poll(timeout_ms=5000))
        start = time.perf_counter()
        while got < n:
            records = await c.poll(timeout_ms=5000)
            if not records:
                raise SystemExit(f"async consumer stalled at {got}")
            got += len(records)
        consume_rate = got / (time.perf_counter() - start)
    return produce_rate, consume_rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    value = b"x" * args.size
    proc, address = start_fake_broker()
    try:
        rate = bench_producer(address, "sync", args.records, value, acks=1)
        print(f"Producer (blocking, acks=1, {args.size} B):  {rate:10,.0f} records/s")
        rate = bench_consumer(address, "sync", args.records)
        print(f"Consumer (blocking, {args.size} B):          {rate:10,.0f} records/s")
        produce_rate, consume_rate = trio.run(bench_async, address, "async", args.records, value)
        print(f"AsyncProducer (acks=1, {args.size} B):       {produce_rate:10,.0f} records/s")
        print(f"AsyncConsumer ({args.size} B):               {consume_rate:10,.0f} records/s")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
