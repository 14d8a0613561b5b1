"""The end-to-end latency floor of this stack, with no kraft code: how fast can a record go from a
producer's unary call, through a server built like a kraft node (grpc.aio on an asyncio thread,
each request handed to a trio task and the answer handed back), to a consumer?

Two consumers are compared, interleaved:
- poll: a blocking unary Fetch loop; the server parks a Fetch until a record arrives (kraft's
  consumer and followers);
- push: one server-streaming call; the server writes each new record on it without being asked.

    python bench/grpc_floor.py --server trio --rate 2000 --seconds 5 --pairs 3

`--replicas 3` adds two follower processes that pull from the server as Kafka's followers do;
a record is answered and readable once both have it (acks=all, the high watermark).
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


# --- the server: grpc.aio on an asyncio thread, handlers there or in trio ----------------------


class Log:
    """Used from one thread: trio's (`flavor` "trio") or the asyncio one ("aio"). With
    `followers`, replicas pull it with Fetch(replica_id >= 0) as Kafka's do: the high watermark is
    the lowest of their fetch offsets and the log end, consumers read below it, and a Produce is
    answered once it is covered (acks=all)."""

    def __init__(self, flavor: str, followers: int) -> None:
        self.flavor, self.followers = flavor, followers
        self.records: list[bytes] = []
        self.hw = 0
        self.follower_ends: dict[int, int] = {}
        self.end_moved, self.hw_moved = self._event(), self._event()

    def _event(self):
        return trio.Event() if self.flavor == "trio" else asyncio.Event()

    async def _wait(self, event, timeout_s: float) -> None:
        if self.flavor == "trio":
            with trio.move_on_after(timeout_s):
                await event.wait()
        else:
            try:
                await asyncio.wait_for(event.wait(), timeout_s)
            except TimeoutError:
                pass

    def _advance_hw(self) -> None:
        if len(self.follower_ends) < self.followers:
            return
        hw = min([len(self.records), *self.follower_ends.values()])
        if hw > self.hw:
            self.hw = hw
            self.hw_moved.set()
            self.hw_moved = self._event()

    async def produce(self, record: bytes) -> int:
        self.records.append(record)
        end = len(self.records)
        self.end_moved.set()
        self.end_moved = self._event()
        self._advance_hw()
        while self.hw < end:
            await self._wait(self.hw_moved, 5)
        return end

    async def fetch(self, replica_id: int, offset: int, max_wait_s: float) -> bytes:
        follower = replica_id >= 0
        if follower:
            self.follower_ends[replica_id] = offset
            self._advance_hw()
        limit = len(self.records) if follower else self.hw
        if offset >= limit:
            await self._wait(self.end_moved if follower else self.hw_moved, max_wait_s)
            limit = len(self.records) if follower else self.hw
        return b"".join(self.records[offset : min(limit, offset + 500)])


FETCH = struct.Struct(">qq")  # replica id (-1: a consumer), offset


def serve(port: int, model: str, followers: int) -> None:
    log = Log(model, followers)

    async def main() -> None:
        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:

            def settle(answer: asyncio.Future, result: bytes) -> None:
                if not answer.done():  # cancelled: the client went away
                    answer.set_result(result)

            def in_trio(loop, fn, *args):
                if model == "aio":
                    return fn(*args)  # a coroutine: run right here on the asyncio thread
                answer = loop.create_future()

                async def run() -> None:
                    result = await fn(*args)
                    loop.call_soon_threadsafe(settle, answer, result)

                token.run_sync_soon(nursery.start_soon, run)
                return answer

            async def produce(data: bytes, _ctx) -> bytes:
                return OFFSET.pack(await in_trio(asyncio.get_running_loop(), log.produce, data))

            async def fetch(data: bytes, _ctx) -> bytes:
                replica_id, offset = FETCH.unpack(data)
                return await in_trio(asyncio.get_running_loop(), log.fetch, replica_id, offset, 0.5)

            async def subscribe(data: bytes, _ctx):
                (offset,) = OFFSET.unpack(data)
                loop = asyncio.get_running_loop()
                while True:
                    answer = await in_trio(loop, log.fetch, -1, offset, 0.5)
                    offset += len(answer) // RECORD
                    yield answer

            async def aio_main() -> None:
                server = grpc.aio.server()
                server.add_generic_rpc_handlers(
                    (
                        grpc.method_handlers_generic_handler(
                            "floor.Floor",
                            {
                                "Produce": grpc.unary_unary_rpc_method_handler(produce),
                                "Fetch": grpc.unary_unary_rpc_method_handler(fetch),
                                "Subscribe": grpc.unary_stream_rpc_method_handler(subscribe),
                            },
                        ),
                    )
                )
                server.add_insecure_port(f"127.0.0.1:{port}")
                await server.start()
                print("ready", flush=True)
                await server.wait_for_termination()

            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_until_complete, args=(aio_main(),), daemon=True
            ).start()
            await trio.sleep_forever()

    trio.run(main)


def follow(port: int, replica_id: int) -> None:
    """A follower: fetch from the leader, keep the records, fetch again at once (its next fetch
    offset is what moves the leader's high watermark)."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    fetch = channel.unary_unary(SERVICE + "Fetch")
    records: list[bytes] = []
    while True:
        answer = fetch(FETCH.pack(replica_id, len(records)), timeout=5)
        records.extend(answer[i : i + RECORD] for i in range(0, len(answer), RECORD))


# --- the client -------------------------------------------------------------------------------


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(
    port: int, server_pid: int, follower_pids: list, mode: str, rate: int, seconds: float
) -> dict:
    try:
        from clients.channel_thread import keep_thread  # kraft's client keeps this thread
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
            answer = fetch(FETCH.pack(-1, offset), timeout=5)
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
            if not stop.is_set():  # the channel closed under a call once the run is over
                raise

    reader = threading.Thread(
        target=read, args=(poll_loop if mode == "poll" else push_loop,), daemon=True
    )
    reader.start()
    time.sleep(0.2)
    cpu0 = (cpu_s(os.getpid()), cpu_s(server_pid), sum(map(cpu_s, follower_pids)))
    interval = 1_000_000_000 // rate
    in_flight: set = set()  # grpcio cancels a call whose future is garbage collected
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
    cpu1 = (cpu_s(os.getpid()), cpu_s(server_pid), sum(map(cpu_s, follower_pids)))
    stop.set()
    got = sorted(latencies[total // 5 :] if len(latencies) >= total else latencies)
    channel.close()

    def pct(q: float) -> float:
        return round(got[min(len(got) - 1, int(q * len(got)))] / 1e6, 3) if got else -1.0

    return {
        "mode": mode,
        "rate": rate,
        "received": len(latencies),
        "sent": total,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "client_cpu_us_per_record": round((cpu1[0] - cpu0[0]) / total * 1e6, 1),
        "server_cpu_us_per_record": round((cpu1[1] - cpu0[1]) / total * 1e6, 1),
        "followers_cpu_us_per_record": round((cpu1[2] - cpu0[2]) / total * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--port", type=int, default=19390)
    parser.add_argument(
        "--server",
        choices=("trio", "aio"),
        default="trio",
        help="trio: handlers in a trio thread, as a kraft node; aio: in the "
        "asyncio thread that runs grpc.aio (no hop)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="3: two follower processes pull from the server, and a record is "
        "answered and read once both have it (acks=all)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--follow", type=int, default=-1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.server, args.replicas - 1)
        return
    if args.follow >= 0:
        follow(args.port, args.follow)
        return
    base = [sys.executable, __file__, "--port", str(args.port)]
    server = subprocess.Popen(
        base + ["--serve", "--server", args.server, "--replicas", str(args.replicas)],
        stdout=subprocess.PIPE,
        text=True,
    )
    followers = []
    try:
        assert server.stdout.readline().strip() == "ready"
        followers = [subprocess.Popen(base + ["--follow", str(i)]) for i in range(1, args.replicas)]
        for _ in range(args.pairs):
            for mode in ("poll", "push"):
                result = run_once(
                    args.port, server.pid, [f.pid for f in followers], mode, args.rate, args.seconds
                )
                print(
                    json.dumps({"server": args.server, "replicas": args.replicas, **result}),
                    flush=True,
                )
    finally:
        for process in (server, *followers):
            process.kill()


if __name__ == "__main__":
    main()
