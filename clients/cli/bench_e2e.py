"""`kraft bench e2e`: end-to-end latency, send -> a consumer has it. A producer sends at a fixed
rate and a consumer in the same process reads the topic; each value carries its send time on a
clock both share (this process's monotonic clock), so no clock skew enters the figures."""

from __future__ import annotations

import argparse
import struct
import threading
import time
from collections.abc import Callable

from clients.cli import bench, bench_kafka, common
from clients.cli.common import CliError, add_leaf, non_negative_int, positive_int
from clients.cli.output import Progress, print_json
from clients.cli.stats import summarize

_STAMP = struct.Struct(">q")  # the send time in ns, in front of each value
# The settings a figure depends on, as bench produce prints them, but for compression: the
# e2e producer never compresses, and the result has no such key.
SETTINGS = tuple(s for s in bench.SETTINGS if s[1] != "compression") + (("LINGER-MS", "linger_ms"),)
_now_ns = time.perf_counter_ns


def register(
    sub: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        sub,
        "e2e",
        help="send at a fixed rate and read it back; report send -> receive latency",
        func=bench_e2e,
        add_common=add_common,
        examples="kraft bench e2e --rate 2000 --seconds 20\n"
        "kraft bench e2e --rate 2000 --acks all --replication-factor 3 "
        "--format json",
    )
    p.add_argument(
        "--topic",
        default="bench-e2e",
        help="topic to write and read (default bench-e2e; created if missing)",
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        default=1,
        metavar="N",
        help="partitions when the topic is created (default 1)",
    )
    p.add_argument(
        "--replication-factor",
        type=positive_int,
        default=-1,
        metavar="N",
        help="replicas when the topic is created (default: the cluster's)",
    )
    p.add_argument(
        "--rate",
        type=positive_int,
        default=1000,
        metavar="RECORDS/S",
        help="records sent per second (default 1000)",
    )
    p.add_argument(
        "--seconds",
        type=positive_int,
        default=10,
        metavar="S",
        help="how long to send (default 10)",
    )
    p.add_argument(
        "--warmup-seconds",
        type=non_negative_int,
        default=2,
        metavar="S",
        help="records sent in the first seconds are not counted (default 2)",
    )
    p.add_argument(
        "--record-size",
        type=positive_int,
        default=100,
        metavar="BYTES",
        help="value size, at least 8 (the send time) (default 100)",
    )
    p.add_argument(
        "--acks",
        type=common.acks,
        default=-1,
        metavar="{0,1,-1,all}",
        help="default all, as kraft produce",
    )
    p.add_argument(
        "--linger-ms",
        type=non_negative_int,
        default=0,
        metavar="MS",
        help="producer linger (default 0: latency, not throughput)",
    )
    p.add_argument("--fetch-max-wait-ms", type=positive_int, default=500, metavar="MS")
    p.add_argument("--histogram", action="store_true", help="also print a latency histogram")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    bench.add_min_insync_replicas(p)
    bench_kafka.add_options(p)


class Receiver:
    """The consumer side: polls from a thread and keeps each counted record's latency."""

    def __init__(self, consumer, count_from_ns: int) -> None:
        self.consumer = consumer
        self.count_from_ns = count_from_ns
        self.latencies_ms: list[float] = []
        self.received = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="bench-e2e-consumer", daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                records = self.consumer.poll(timeout_ms=200)
                now = _now_ns()
                for r in records:
                    sent = _STAMP.unpack_from(r.value)[0]
                    self.received += 1
                    if sent >= self.count_from_ns:
                        self.latencies_ms.append((now - sent) / 1e6)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc


def bench_e2e(args: argparse.Namespace) -> int:
    if args.client == "kafka":
        return bench_kafka.e2e(args)
    if args.record_size < _STAMP.size:
        raise CliError(
            f"--record-size {args.record_size}: at least {_STAMP.size} bytes (the "
            "send time travels in the value)"
        )
    bench.ensure_topic(
        args.bootstrap_server,
        args.topic,
        args.partitions,
        args.replication_factor,
        bench.topic_configs(args),
    )
    padding = bench.make_payload(args.record_size - _STAMP.size)
    progress = Progress(enabled=not args.quiet)
    total = args.rate * args.seconds
    with (
        common.make_consumer(
            args.bootstrap_server,
            fetch_max_wait_ms=args.fetch_max_wait_ms,
            client_id="kraft-bench-e2e",
        ) as consumer,
        common.make_producer(
            args.bootstrap_server,
            acks=args.acks,
            linger_ms=args.linger_ms,
            client_id="kraft-bench-e2e",
        ) as producer,
    ):
        tps = [common.topic_partition(args.topic, p) for p in range(args.partitions)]
        consumer.assign(tps)
        consumer.seek_to_end(*tps)
        for tp in tps:
            consumer.position(tp)  # resolve "end" now, before anything is sent
        start = _now_ns()
        receiver = Receiver(consumer, start + args.warmup_seconds * 1_000_000_000)
        receiver.thread.start()
        interval_ns = 1_000_000_000 // args.rate
        failures = []
        for i in range(total):
            due = start + i * interval_ns
            while (now := _now_ns()) < due:
                time.sleep(min((due - now) / 1e9, 0.001))
            future = producer.send(args.topic, _STAMP.pack(now) + padding)
            if i % 1000 == 0:
                future.add_done_callback(lambda f: f.exception() and failures.append(f.exception()))
                progress.update(f"{i} sent, {receiver.received} received")
            if failures:
                break
        producer.flush()
        deadline = time.monotonic() + 10
        while receiver.received < total and time.monotonic() < deadline and not receiver.error:
            time.sleep(0.01)
        receiver.stop.set()
        receiver.thread.join(5)
    progress.done()
    if failures:
        raise CliError(f"a send failed: {' '.join(str(failures[0]).split())}")
    if receiver.error is not None:
        raise CliError(f"the consumer failed: {receiver.error}")
    result = {
        "topic": args.topic,
        "client": "kraft",
        "sent": total,
        "received": receiver.received,
        "rate": args.rate,
        "seconds": args.seconds,
        "record_size": args.record_size,
        "acks": args.acks,
        "linger_ms": args.linger_ms,
        "partitions": args.partitions,
        **summarize(receiver.latencies_ms).as_dict(),
        "latency": "send -> consumer poll returns it, one process's monotonic clock",
    }
    if args.format == "json":
        print_json(result)
    else:
        bench.print_result(
            args,
            {
                **result,
                "records": receiver.received,
                "records_per_sec": args.rate,
                "mb_per_sec": round(args.rate * args.record_size / bench.MB, 3),
            },
            receiver.latencies_ms,
            settings=SETTINGS,
        )
    if receiver.received < total:
        raise CliError(
            f"only {receiver.received} of {total} records came back within 10 s of the last send"
        )
    return 0
