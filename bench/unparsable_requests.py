"""Memory a real node keeps per request that does not parse (grpcio's asyncio server refuses it
with INVALID_ARGUMENT): RSS after a warm-up, then after N more such requests, per request.

    python bench/unparsable_requests.py [--requests 20000] [--at-once 100]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

import grpc

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.bridge import open_channel  # noqa: E402

GARBAGE = b"\xff" * 64  # an invalid field tag: no message type parses it


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(x for x in f if x.startswith("VmRSS:")).split()[1])


def settled_rss_kb(pid: int) -> int:
    """The lowest of a few samples: what stays, not what is still in flight."""
    samples = []
    for _ in range(10):
        time.sleep(0.3)
        samples.append(rss_kb(pid))
    return min(samples)


def send(channel, n: int, at_once: int) -> int:
    call = channel.unary_unary("/kraft.broker.v1.Broker/Metadata")
    refused = 0
    for start in range(0, n, at_once):
        futures = [call.future(GARBAGE, timeout=10) for _ in range(min(at_once, n - start))]
        for f in futures:
            try:
                f.result()
            except grpc.RpcError as exc:
                refused += exc.code() == grpc.StatusCode.INVALID_ARGUMENT
    return refused


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--at-once", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node = subprocess.Popen(
            [sys.executable, "-m", "entry.main", "dev", "--data", f"{tmp}/d", "--port", "0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=open(f"{tmp}/log", "wb"),
        )
        try:
            line = node.stdout.readline().decode()
            address = line.split("listening on ", 1)[1].split(",", 1)[0]
            channel = open_channel(address)
            send(channel, 2_000, args.at_once)  # warm-up: one-time allocations
            before = settled_rss_kb(node.pid)
            started = time.monotonic()
            refused = send(channel, args.requests, args.at_once)
            elapsed = time.monotonic() - started
            after = settled_rss_kb(node.pid)
            log_bytes = pathlib.Path(f"{tmp}/log").stat().st_size
            print(
                f"{args.requests} unparsable requests ({refused} refused INVALID_ARGUMENT) in "
                f"{elapsed:.1f} s; RSS {before / 1024:.1f} -> {after / 1024:.1f} MB: "
                f"{(after - before) * 1024 / args.requests:.0f} bytes per request; "
                f"node log {log_bytes} bytes"
            )
        finally:
            node.terminate()
            node.wait(20)


if __name__ == "__main__":
    main()
