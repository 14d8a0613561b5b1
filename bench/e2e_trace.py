"""Where one record's end-to-end latency goes: sends records one at a time (a slow rate, so each
travels alone) through the blocking Producer and Consumer, timestamping each hop, and prints the
median time of each stage: send -> sender woken -> Produce issued -> answered -> ... -> poll."""

from __future__ import annotations

import argparse
import statistics
import struct
import time

import trio

from clients import bridge
from clients.cli import bench, common
from clients.consumer import fetcher as fetcher_mod
from clients.producer import sender as sender_mod

_now = time.perf_counter_ns
_STAMP = struct.Struct(">q")
marks: dict[str, int] = {}  # stage -> first time it happened for the current record
_orig_call = bridge.call


def mark(stage: str) -> None:
    marks.setdefault(stage, _now())


async def traced_call(method, request, timeout):
    """bridge.call with timestamps: issued, grpc's callback thread, back in trio."""
    name = getattr(method, "_method", b"?").decode().rsplit("/", 1)[-1]
    if name not in ("Produce", "Fetch"):
        return await _orig_call(method, request, timeout)
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    tag = "produce" if name == "Produce" else "fetch"
    if tag == "produce":
        mark("produce issued")
    future = method.future(request, timeout=timeout)

    def on_done(_f):
        if (
            tag == "fetch"
            and "produce answered (grpc thread)" not in marks
            and "produce issued" not in marks
        ):
            return token.run_sync_soon(done.set)
        mark(f"{tag} answered (grpc thread)")
        token.run_sync_soon(done.set)

    future.add_done_callback(on_done)
    await done.wait()
    mark(f"{tag} answer in trio")
    return future.result()


_orig_start = getattr(bridge, "start", None)


def traced_start(method, request, timeout, *extra):
    """bridge.start (where it exists) with the same timestamps as traced_call."""
    name = getattr(method, "_method", b"?").decode().rsplit("/", 1)[-1]
    if name == "Produce":
        mark("produce issued")
    pending = _orig_start(method, request, timeout, *extra)
    if name in ("Produce", "Fetch"):
        tag = name.lower()
        pending.future.add_done_callback(
            lambda _f: (
                (tag == "produce" or "produce issued" in marks)
                and mark(f"{tag} answered (grpc thread)")
            )
        )
        pending.done = _MarkingEvent(pending.done, tag)
    return pending


class _MarkingEvent:
    def __init__(self, event, tag):
        self.event, self.tag = event, tag

    async def wait(self):
        await self.event.wait()
        if self.tag == "produce" or "produce issued" in marks:
            mark(f"{self.tag} answer in trio")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--interval-ms", type=float, default=10)
    p.add_argument("--acks", default="1")
    args = p.parse_args()
    if _orig_start is not None:
        bridge.start = traced_start
    else:
        bridge.call = traced_call
    orig_wake = sender_mod.Sender.wake

    def wake(self):
        mark("sender woken in trio")
        orig_wake(self)

    sender_mod.Sender.wake = wake
    if hasattr(sender_mod.Sender, "wake_from_thread"):
        orig_from_thread = sender_mod.Sender.wake_from_thread

        def wake_from_thread(self):
            mark("sender woken in trio")
            orig_from_thread(self)

        sender_mod.Sender.wake_from_thread = wake_from_thread
    if hasattr(fetcher_mod.Fetcher, "_take_answer"):  # the answer buffered in grpc's thread
        orig_take = fetcher_mod.Fetcher._take_answer

        def take_answer(self, wanted, resp):
            got = orig_take(self, wanted, resp)
            if got and "produce issued" in marks:
                mark("fetch buffered (grpc thread)")
            return got

        fetcher_mod.Fetcher._take_answer = take_answer
    topic = "bench-trace"
    bench.ensure_topic(args.bootstrap_server, topic, 1, -1)
    rows: list[dict] = []
    with (
        common.make_consumer(
            args.bootstrap_server, fetch_max_wait_ms=500, client_id="trace"
        ) as consumer,
        common.make_producer(
            args.bootstrap_server, acks=common.acks(args.acks), linger_ms=0, client_id="trace"
        ) as producer,
    ):
        tp = common.topic_partition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        consumer.position(tp)
        for i in range(args.count + 20):
            time.sleep(args.interval_ms / 1000)
            marks.clear()
            t0 = _now()
            marks["send"] = t0
            producer.send(topic, _STAMP.pack(t0))
            got = []
            while not got:
                got = consumer.poll(timeout_ms=1000)
            marks["poll returned"] = _now()
            if i >= 20:
                rows.append(dict(marks))
    order = [
        "send",
        "sender woken in trio",
        "produce issued",
        "fetch answered (grpc thread)",
        "fetch buffered (grpc thread)",
        "produce answered (grpc thread)",
        "fetch answer in trio",
        "poll returned",
    ]
    print(f"{len(rows)} records, one at a time, {args.interval_ms} ms apart; median ms from send:")
    for stage in order:
        vals = [(r[stage] - r["send"]) / 1e6 for r in rows if stage in r]
        if vals:
            print(
                f"  {stage:34s} {statistics.median(vals):7.3f}  (p90 "
                f"{sorted(vals)[int(len(vals) * 0.9)]:.3f}, n={len(vals)})"
            )


if __name__ == "__main__":
    main()
