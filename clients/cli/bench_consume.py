"""`kraft bench consume`: reads a topic as fast as the consumer can and reports records/s, MB/s and
the age of each record when polled (poll time minus record timestamp: not a fetch latency)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from clients.cli import bench, bench_kafka, common
from clients.cli.common import CliError, add_leaf, positive_int
from clients.cli.consume import choose_partitions
from clients.cli.output import Progress, info
from clients.cli.stats import summarize

_wall_ms = lambda: time.time() * 1000  # noqa: E731  record timestamps are wall-clock ms


def register(
    sub: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        sub,
        "consume",
        help="read a topic as fast as possible; report rate and record age",
        func=bench_consume,
        add_common=add_common,
        examples="kraft bench consume\n"
        "kraft bench consume --topic t --num-records 500000 --format json\n"
        "kraft bench consume --no-from-beginning --num-records 100000  "
        "# while kraft bench produce runs: e2e latency",
    )
    p.add_argument("--topic", default="bench", help="topic to read (default bench)")
    p.add_argument(
        "--num-records",
        type=positive_int,
        metavar="N",
        help="records to read (default: everything up to the end offsets at start)",
    )
    p.add_argument(
        "--from-beginning",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start at the log start (default) or, with --no-from-beginning, at the end",
    )
    p.add_argument("--fetch-max-bytes", type=positive_int, default=52428800, metavar="BYTES")
    p.add_argument(
        "--max-partition-fetch-bytes", type=positive_int, default=1048576, metavar="BYTES"
    )
    p.add_argument("--max-poll-records", type=positive_int, default=500, metavar="N")
    p.add_argument(
        "--timeout-ms",
        type=positive_int,
        default=10000,
        metavar="MS",
        help="give up when nothing arrives for this long (default 10000)",
    )
    p.add_argument("--histogram", action="store_true", help="also print a histogram of ages")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    bench_kafka.add_options(p)


LATENCY_SAMPLE_EVERY = 16
AGE_MEANING = (
    "poll time minus the record's timestamp, for every 16th record: how old it was "
    "when read (it includes time spent in the log before this run), not a fetch "
    "latency"
)
AGE_COLUMNS = (
    ("AGE-P50-MS", "age_p50_ms"),
    ("AGE-P99-MS", "age_p99_ms"),
    ("AGE-MAX-MS", "age_max_ms"),
)
CONSUME_SETTINGS = (("PARTITIONS", "partitions"), ("AVG-SIZE", "record_size"))


def bench_consume(args: argparse.Namespace) -> int:
    if args.client == "kafka":
        return bench_kafka.consume(args)
    progress = Progress(enabled=not args.quiet)
    ages_ms: list[float] = []
    count = nbytes = 0
    with common.make_consumer(
        args.bootstrap_server,
        fetch_max_bytes=args.fetch_max_bytes,
        max_partition_fetch_bytes=args.max_partition_fetch_bytes,
        max_poll_records=args.max_poll_records,
        auto_offset_reset="earliest",
        client_id="kraft-bench-consume",
    ) as consumer:
        tps = [
            common.topic_partition(args.topic, p)
            for p in choose_partitions(consumer, args.topic, None)
        ]
        consumer.assign(tps)
        if args.from_beginning:
            consumer.seek_to_beginning(*tps)
        else:
            consumer.seek_to_end(*tps)
        target = args.num_records or _available(consumer, tps)
        if not target:
            raise CliError(_nothing_to_read(args))
        start = last = window_at = bench._clock()
        window_count = 0
        while count < target:
            records = consumer.poll(timeout_ms=1000, max_records=target - count)
            now = bench._clock()
            if not records:
                if (now - last) * 1000 >= args.timeout_ms:
                    break
                continue
            last = now
            records = records[: target - count]
            polled_ms = _wall_ms()
            # Every 16th record's age is a fair sample and keeps the loop off the consumer's back.
            ages_ms.extend([polled_ms - r.timestamp for r in records[::LATENCY_SAMPLE_EVERY]])
            nbytes += sum([len(r.value or b"") + len(r.key or b"") for r in records])
            count += len(records)
            if now - window_at >= 1.0:
                rate = (count - window_count) / (now - window_at)
                progress.update(f"{count} records read, {rate:,.0f} rec/s")
                window_at, window_count = now, count
        seconds = max(last - start, 1e-9)
    progress.done()
    # Ages, not latencies: with --from-beginning mostly how long a record sat in the log before
    # this run, so they get names of their own rather than the produce bench's p50_ms.
    ages = {
        f"age_{k.removesuffix('_ms')}_ms" if k.endswith("_ms") else "age_samples": v
        for k, v in summarize(ages_ms).as_dict().items()
    }
    result = {
        "topic": args.topic,
        "client": "kraft",
        "records": count,
        "seconds": round(seconds, 3),
        "records_per_sec": round(count / seconds, 1),
        "mb_per_sec": round(nbytes / bench.MB / seconds, 3),
        "bytes": nbytes,
        **ages,
        "age": AGE_MEANING,
        "partitions": len(tps),
        "record_size": round(nbytes / count) if count else None,
        "max_poll_records": args.max_poll_records,
        "fetch_max_bytes": args.fetch_max_bytes,
    }
    bench.print_result(args, result, ages_ms, AGE_COLUMNS, CONSUME_SETTINGS)
    if args.format != "json":
        info(f"AGE: {AGE_MEANING}")
    if count < target:
        info(
            f"warning: stopped after {count} of {target} records: nothing arrived for "
            f"{args.timeout_ms} ms"
        )
        return 1
    return 0


def _available(consumer: Any, tps: list) -> int:
    ends = consumer.end_offsets(tps)
    return sum(max(0, ends[tp] - consumer.position(tp)) for tp in tps)


def _nothing_to_read(args: argparse.Namespace) -> str:
    if not args.from_beginning:
        return (
            "nothing to wait for: with --no-from-beginning pass --num-records N "
            "(and run kraft bench produce meanwhile)"
        )
    return (
        f"topic '{args.topic}' is empty; fill it first with: "
        f"kraft bench produce --topic {args.topic}"
    )
