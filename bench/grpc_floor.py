"""The end-to-end latency floor of this stack, with no kraft code: how fast can a record go from a
producer's unary call, through a server built like a kraft node (grpc.aio on an asyncio thread,
each request handed to a trio task and the answer handed back), to a consumer?

Two consumers are compared, interleaved:
- poll: a blocking unary Fetch loop; the server parks a Fetch until a record arrives (kraft's
  consumer and followers);
- push: one server-streaming call; the server writes each new record on it without being asked.

    python bench/grpc_floor.py --server trio --rate 2000 --seconds 5 --pairs 3

`--server aio` runs the handlers on the asyncio thread itself (no trio hop): the cheapest Python
gRPC server there is. Records are 100 B, the first 8 the send time (time.monotonic_ns: one
process sends and reads); the first fifth of each run is not counted.
The producer calls `future()` from the pacing thread (no sender thread) and the consumer reads in
a thread of its own (no hand-off to a poller): a floor, below what a real client can do."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import subprocess
import sys
import threading
import time

import grpc
import trio

SERVICE = "/floor.Floor/"
RECORD = 100
STAMP = struct.Struct(">q")
OFFSET = struct.Struct(">q")


# --- the server: grpc.aio on an asyncio thread, handlers in trio ------------------------------

class Log:
    """Trio thread only."""

    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.moved = trio.Event()

    def append(self, record: bytes) -> int:
        self.records.append(record)
        self.moved.set()
        self.moved = trio.Event()
        return len(self.records)

    async def read(self, offset: int, max_wait_s: float) -> bytes:
        if offset >= len(self.records):
            with trio.move_on_after(max_wait_s):
                await self.moved.wait()
        return b"".join(self.records[offset:offset + 500])


class AioLog(Log):
    """Asyncio thread only: the server with no trio hop (`--server aio`)."""

    def __init__(self) -> None:
        self.records = []
        self.moved = asyncio.Event()

    def append(self, record: bytes) -> int:
        self.records.append(record)
        self.moved.set()
        self.moved = asyncio.Event()
        return len(self.records)

    async def read(self, offset: int, max_wait_s: float) -> bytes:
        if offset >= len(self.records):
            try:
                await asyncio.wait_for(self.moved.wait(), max_wait_s)
            except asyncio.TimeoutError:
                pass
        return b"".join(self.records[offset:offset + 500])


def serve(port: int, model: str) -> None:
    log = Log() if model == "trio" else AioLog()

    async def main() -> None:
        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            def settle(answer: asyncio.Future, result: bytes) -> None:
                if not answer.done():     # cancelled: the client went away
                    answer.set_result(result)

            def in_trio(loop, fn, *args):
                if model == "aio":
                    return fn(*args)     # a coroutine: run right here on the asyncio thread
                answer = loop.create_future()

                async def run() -> None:
                    result = await fn(*args)
                    loop.call_soon_threadsafe(settle, answer, result)
                token.run_sync_soon(nursery.start_soon, run)
                return answer

            async def produce(data: bytes, _ctx) -> bytes:
                async def append():
                    return OFFSET.pack(log.append(data))
                return await in_trio(asyncio.get_running_loop(), append)

            async def fetch(data: bytes, _ctx) -> bytes:
                (offset,) = OFFSET.unpack(data)
                return await in_trio(asyncio.get_running_loop(), log.read, offset, 0.5)

            async def subscribe(data: bytes, _ctx):
                (offset,) = OFFSET.unpack(data)
                loop = asyncio.get_running_loop()
                while True:
                    answer = await in_trio(loop, log.read, offset, 0.5)
                    offset += len(answer) // RECORD
                    yield answer

            async def aio_main() -> None:
                server = grpc.aio.server()
                server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("floor.Floor", {
                    "Produce": grpc.unary_unary_rpc_method_handler(produce),
                    "Fetch": grpc.unary_unary_rpc_method_handler(fetch),
                    "Subscribe": grpc.unary_stream_rpc_method_handler(subscribe),
                }),))
                server.add_insecure_port(f"127.0.0.1:{port}")
                await server.start()
                print("ready", flush=True)
                await server.wait_for_termination()

            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_until_complete, args=(aio_main(),),
                             daemon=True).start()
            await trio.sleep_forever()

    trio.run(main)


# --- the client -------------------------------------------------------------------------------

def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(port: int, server_pid: int, mode: str, rate: int, seconds: float) -> dict:
    try:
        from clients.channel_thread import keep_thread     # kraft's client keeps this thread
    except ImportError:
        keep_thread = None
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    if keep_thread is not None:
        keep_thread(channel)
    produce = channel.unary_unary(SERVICE + "Produce")
    fetch = channel.unary_unary(SERVICE + "Fetch")
    subscribe = channel.unary_stream(SERVICE + "Subscribe")
    end = OFFSET.unpack(produce(STAMP.pack(0) + bytes(RECORD - 8), timeout=5))[0]
    total = int(rate * seconds)
    latencies: list[int] = []
    stop = threading.Event()

    def take(answer: bytes) -> None:
        now = time.monotonic_ns()
        for i in range(0, len(answer), RECORD):
            latencies.append(now - STAMP.unpack_from(answer, i)[0])

    def poll_loop() -> None:
        offset = end
        while not stop.is_set():
            answer = fetch(OFFSET.pack(offset), timeout=5)
            offset += len(answer) // RECORD
            take(answer)

    def push_loop() -> None:
        call = subscribe(OFFSET.pack(end))
        try:
            for answer in call:
                take(answer)
                if stop.is_set():
                    break
        finally:
            call.cancel()

    def read(loop) -> None:
        try:
            loop()
        except grpc.RpcError:
            if not stop.is_set():     # the channel closed under a call once the run is over
                raise

    reader = threading.Thread(target=read, args=(poll_loop if mode == "poll" else push_loop,),
                              daemon=True)
    reader.start()
    time.sleep(0.2)
    cpu0 = (cpu_s(os.getpid()), cpu_s(server_pid))
    interval = 1_000_000_000 // rate
    in_flight: set = set()     # grpcio cancels a call whose future is garbage collected
    begin = time.monotonic_ns()
    for i in range(total):
        due = begin + i * interval
        while (now := time.monotonic_ns()) < due:
            time.sleep(min((due - now) / 1e9, 0.001))
        future = produce.future(STAMP.pack(now) + bytes(RECORD - 8), timeout=5)
        in_flight.add(future)
        future.add_done_callback(in_flight.discard)
    deadline = time.monotonic() + 5
    while len(latencies) < total and time.monotonic() < deadline:
        time.sleep(0.01)
    cpu1 = (cpu_s(os.getpid()), cpu_s(server_pid))
    stop.set()
    got = sorted(latencies[total // 5:] if len(latencies) >= total else latencies)
    channel.close()

    def pct(q: float) -> float:
        return round(got[min(len(got) - 1, int(q * len(got)))] / 1e6, 3) if got else -1.0
    return {"mode": mode, "rate": rate, "received": len(latencies), "sent": total,
            "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "client_cpu_us_per_record": round((cpu1[0] - cpu0[0]) / total * 1e6, 1),
            "server_cpu_us_per_record": round((cpu1[1] - cpu0[1]) / total * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--port", type=int, default=19390)
    parser.add_argument("--server", choices=("trio", "aio"), default="trio",
                        help="trio: handlers in a trio thread, as a kraft node; aio: in the "
                             "asyncio thread that runs grpc.aio (no hop)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.server)
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--port", str(args.port),
                               "--server", args.server],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        for _ in range(args.pairs):
            for mode in ("poll", "push"):
                result = run_once(args.port, server.pid, mode, args.rate, args.seconds)
                print(json.dumps({"server": args.server, **result}), flush=True)
    finally:
        server.kill()


if __name__ == "__main__":
    main()
