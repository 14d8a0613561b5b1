"""`kraft bench produce|consume`: throughput and latency of the real clients against a cluster,
with progress on stderr and one result table (or one JSON object)."""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from clients._sync import Doorbell
from clients.cli import common
from clients.cli.common import COMPRESSION_TYPES, CliError, add_leaf, non_negative_int, positive_int
from clients.cli.output import Progress, info, print_json, print_table
from clients.cli.stats import histogram, summarize
from clients.errors import ErrorCode, KraftError

MB = 1024 * 1024  # MB/s as Kafka's perf tools count it
_clock = time.perf_counter  # swapped in tests
_sleep = time.sleep


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    from clients.cli import bench_consume, bench_e2e, bench_kafka

    bench = subparsers.add_parser(
        "bench",
        help="measure produce and consume throughput and latency",
        description="Measure produce and consume throughput and latency.",
        epilog="examples:\n  kraft bench produce --num-records 1000000 --record-size 100\n"
        "  kraft bench consume --topic bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = bench.add_subparsers(dest="bench_command", metavar="COMMAND", required=True)
    p = add_leaf(
        sub,
        "produce",
        help="send records as fast as allowed; report rate and latency",
        func=bench_produce,
        add_common=add_common,
        examples="kraft bench produce\n"
        "kraft bench produce --topic t --partitions 6 --acks all "
        "--compression lz4\n"
        "kraft bench produce --throughput 50000 --num-records 500000 "
        "--format json",
    )
    p.add_argument(
        "--topic", default="bench", help="topic to write (default bench; created if missing)"
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
        "--num-records",
        type=positive_int,
        default=1_000_000,
        metavar="N",
        help="records to send (default 1000000)",
    )
    p.add_argument(
        "--record-size",
        type=non_negative_int,
        default=100,
        metavar="BYTES",
        help="value size (default 100)",
    )
    p.add_argument(
        "--acks",
        type=common.acks,
        default=-1,
        metavar="{0,1,-1,all}",
        help="as kraft produce and Kafka's producer: all (default), 1 or 0",
    )
    p.add_argument("--compression", choices=COMPRESSION_TYPES, default="none")
    p.add_argument("--batch-size", type=positive_int, default=16384, metavar="BYTES")
    p.add_argument("--linger-ms", type=non_negative_int, default=5, metavar="MS")
    p.add_argument(
        "--throughput",
        type=positive_int,
        metavar="RECORDS/S",
        help="cap in records/s (default: unlimited)",
    )
    p.add_argument(
        "--sample-every",
        type=positive_int,
        metavar="N",
        help="time every Nth record (default: about 4 per full batch, at most 1 in 64)",
    )
    p.add_argument(
        "--send-batch",
        action="store_true",
        help="send each sampling chunk (--sample-every records) with one send_batch "
        "call, the bulk API, instead of one send per record; the latency is then "
        "that of the chunk's last acknowledgement",
    )
    p.add_argument("--histogram", action="store_true", help="also print a latency histogram")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_min_insync_replicas(p)
    bench_kafka.add_options(p)
    bench_consume.register(sub, add_common)
    bench_e2e.register(sub, add_common)


def add_min_insync_replicas(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-insync-replicas",
        type=positive_int,
        metavar="N",
        help="the topic's min.insync.replicas when it is created (default: the cluster's)",
    )


def topic_configs(args: argparse.Namespace) -> dict[str, str]:
    """The configs a bench topic is created with."""
    if getattr(args, "min_insync_replicas", None):
        return {"min.insync.replicas": str(args.min_insync_replicas)}
    return {}


def make_payload(size: int, seed: int = 0) -> bytes:
    """One value reused for every record (generating per record would bench the generator);
    letters, like Kafka's perf tool, so compression has something to do."""
    rng = random.Random(seed)
    return bytes(rng.choices(range(ord("A"), ord("Z") + 1), k=size))


def auto_sample_every(batch_size: int, record_size: int) -> int:
    # Several sampled records per full batch, so a failed batch is always noticed.
    per_batch = batch_size // (record_size + 16)
    return max(1, min(64, per_batch // 4))


def ensure_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    replication_factor: int,
    configs: dict[str, str] | None = None,
) -> None:
    """Creates the topic through kraft's admin client unless it exists (an existing topic keeps
    its settings)."""
    with common.make_admin(bootstrap) as admin:
        if topic in admin.list_topics():
            return
        try:
            admin.create_topics([common.new_topic(topic, partitions, replication_factor, configs)])
            info(f"created topic {topic} with {partitions} partition(s)")
        except KraftError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise


class _Timed:
    """A sampled record's callback: one object, where a closure over (samples, sent_at) takes
    three (function and cells) that the garbage collector walks until the record's batch
    completes (about one record in 35 is sampled)."""

    __slots__ = ("samples", "sent_at")

    def __init__(self, samples: Samples, sent_at: float) -> None:
        self.samples, self.sent_at = samples, sent_at

    def __call__(self, future: Any) -> None:
        self.samples._done(future, self.sent_at)


class Samples:
    """Send-to-ack latencies of sampled records, filled by the producer's callback thread."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.errors = 0
        self.first_error: BaseException | None = None
        self.completed = 0
        # A bare lock and a Doorbell, not a Condition: a Ctrl-C in the waiting main thread must
        # never leave a lock held that the producer's thread needs (it would hang the close).
        self.lock = threading.Lock()
        self._bell = Doorbell()

    def track(self, future: Any, sent_at: float) -> None:
        future.add_done_callback(_Timed(self, sent_at))

    def _done(self, future: Any, sent_at: float) -> None:
        elapsed_ms = (_clock() - sent_at) * 1000
        exc = future.exception()
        with self.lock:
            self.completed += 1
            if exc is None:
                self.latencies_ms.append(elapsed_ms)
            else:
                self.errors += 1
                self.first_error = self.first_error or exc
        self._bell.ring()

    def wait_for(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.completed < count and time.monotonic() < deadline:
            self._bell.wait(min(0.05, deadline - time.monotonic()))


def bench_produce(args: argparse.Namespace) -> int:
    if args.client == "kafka":
        from clients.cli import bench_kafka

        return bench_kafka.produce(args)
    ensure_topic(
        args.bootstrap_server,
        args.topic,
        args.partitions,
        args.replication_factor,
        topic_configs(args),
    )
    payload = make_payload(args.record_size)
    every = args.sample_every or auto_sample_every(args.batch_size, args.record_size)
    if args.throughput:
        every = min(every, max(1, args.throughput // 200))  # throttle in steps of <= 5 ms
    samples = Samples()
    progress = Progress(enabled=not args.quiet)
    topic, total = args.topic, args.num_records
    with common.make_producer(
        args.bootstrap_server,
        acks=args.acks,
        batch_size=args.batch_size,
        linger_ms=args.linger_ms,
        compression_type=args.compression,
        client_id="kraft-bench-produce",
    ) as producer:
        send = producer.send
        start = _clock()
        window = (start, 0, 0)  # (time, records sent, latency samples seen) at the last report
        sent = tracked = 0
        while sent < total:
            chunk = min(every, total - sent)
            # The first record of each chunk is timed; the rest go through the bare fast path.
            sent_at = _clock()
            if args.send_batch:
                samples.track(producer.send_batch(topic, [payload] * chunk), sent_at)
            else:
                samples.track(send(topic, payload), sent_at)
                for _ in range(chunk - 1):
                    send(topic, payload)
            sent += chunk
            tracked += 1
            if samples.errors:
                break
            now = _clock()
            if args.throughput and now < start + sent / args.throughput:
                _sleep(start + sent / args.throughput - now)
            if now - window[0] >= 1.0:
                progress.update(_window_line(samples, window, now, sent, args.record_size))
                window = (now, sent, len(samples.latencies_ms))
        producer.flush()
        seconds = max(_clock() - start, 1e-9)
        samples.wait_for(tracked)
        partitions = len(producer.partitions_for(topic))
    progress.done()
    if samples.errors:
        raise CliError(
            f"bench stopped after {sent} records: {samples.errors} timed record(s) "
            f"failed, first: {' '.join(str(samples.first_error).split())}"
        )
    result = {
        "topic": topic,
        "client": "kraft",
        "records": sent,
        "seconds": round(seconds, 3),
        "records_per_sec": round(sent / seconds, 1),
        "mb_per_sec": round(sent * args.record_size / MB / seconds, 3),
        **summarize(samples.latencies_ms).as_dict(),
        "latency": "send to acknowledgement of sampled records",
        "acks": acks_name(args.acks),
        "record_size": args.record_size,
        "compression": args.compression,
        "partitions": partitions,
        "batch_size": args.batch_size,
        "linger_ms": args.linger_ms,
        "errors": samples.errors,
    }
    print_result(args, result, samples.latencies_ms)
    return 0


def acks_name(acks: int) -> str:
    """As the user writes it: all, 1 or 0."""
    return "all" if acks == -1 else str(acks)


def _window_line(samples: Samples, window: tuple, now: float, sent: int, size: int) -> str:
    then, sent_then, seen = window
    rate = (sent - sent_then) / max(now - then, 1e-9)
    recent = samples.latencies_ms[seen:]
    latency = (
        f", latency avg {sum(recent) / len(recent):.1f} ms max {max(recent):.1f} ms"
        if recent
        else ""
    )
    return f"{sent} records sent, {rate:,.0f} rec/s ({rate * size / MB:.2f} MB/s){latency}"


# The settings a figure depends on, printed beside it (table) or in it (JSON).
SETTINGS = (
    ("ACKS", "acks"),
    ("SIZE", "record_size"),
    ("COMPRESSION", "compression"),
    ("PARTITIONS", "partitions"),
)
LATENCY = (
    ("P50-MS", "p50_ms"),
    ("P99-MS", "p99_ms"),
    ("P99.9-MS", "p999_ms"),
    ("MAX-MS", "max_ms"),
)


def print_result(
    args: argparse.Namespace,
    result: dict,
    latencies_ms: list[float],
    latency_columns: tuple = LATENCY,
    settings: tuple = SETTINGS,
) -> None:
    if args.format == "json":
        print_json(result)
        return
    columns = (
        ("RECORDS", "records"),
        ("SECONDS", "seconds"),
        ("RECORDS/S", "records_per_sec"),
        ("MB/S", "mb_per_sec"),
        *latency_columns,
        *settings,
    )
    row = [round(result[k]) if k == "records_per_sec" else result[k] for _, k in columns]
    print_table([name for name, _ in columns], [row])
    if getattr(args, "histogram", False) and latencies_ms:
        print()
        print_table(["LATENCY-MS<=", "COUNT"], [[int(b), c] for b, c in histogram(latencies_ms)])
