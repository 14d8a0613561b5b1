"""`kraft produce TOPIC`: one record per line of stdin (optionally KEY<SEP>VALUE), sent without
waiting per record; a summary on stderr, or one JSON line per acknowledged record."""

from __future__ import annotations

import argparse
import collections
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from clients.cli import common
from clients.cli.common import (
    COMPRESSION_TYPES,
    CliError,
    add_leaf,
    key_value,
    non_negative_int,
    positive_int,
)
from clients.cli.output import info, plural, print_json


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        subparsers,
        "produce",
        help="produce records read from stdin, one per line",
        func=produce,
        add_common=add_common,
        examples="echo hello | kraft produce orders\n"
        "printf 'k1:v1\\nk2:v2\\n' | kraft produce orders --key-separator :\n"
        "kraft produce orders --acks all --compression zstd < records.txt",
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument(
        "--key-separator", metavar="SEP", help="split each line into key and value at the first SEP"
    )
    p.add_argument(
        "--partition",
        type=non_negative_int,
        metavar="N",
        help="send every record to this partition (default: by key, or spread)",
    )
    p.add_argument(
        "-H",
        "--header",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header added to every record; repeat for more",
    )
    p.add_argument(
        "--acks",
        type=common.acks,
        default=-1,
        metavar="{0,1,-1,all}",
        help="acknowledgements to wait for (default: all)",
    )
    p.add_argument("--compression", choices=COMPRESSION_TYPES, default="none")
    p.add_argument(
        "--linger-ms",
        type=non_negative_int,
        default=5,
        metavar="MS",
        help="how long a batch waits for more records (default 5)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=16384,
        metavar="BYTES",
        help="largest batch in bytes (default 16384)",
    )


def read_records(stream: BinaryIO, separator: bytes | None) -> Iterator[tuple[bytes | None, bytes]]:
    """(key, value) per line; the line ending is not part of the value."""
    for number, line in enumerate(stream, 1):
        line = line[:-1] if line.endswith(b"\n") else line
        line = line[:-1] if line.endswith(b"\r") else line
        if separator is None:
            yield None, line
            continue
        key, sep, value = line.partition(separator)
        if not sep:
            raise CliError(
                f"line {number} has no key separator {separator.decode()!r}; "
                "write each line as KEY<SEP>VALUE, or drop --key-separator"
            )
        yield key, value


class _Outcome:
    """Collects acknowledgements from the producer's background thread."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.acked = 0
        self.completed = 0
        self.error: BaseException | None = None

    def __call__(self, future: Any) -> None:
        exc = future.exception()
        with self.cond:
            self.completed += 1
            if exc is None:
                self.acked += 1
            elif self.error is None:
                self.error = exc
            self.cond.notify_all()

    def wait_for(self, sent: int, timeout: float = 5.0) -> None:
        # A future can be done a moment before its callback has run on the producer's thread.
        with self.cond:
            self.cond.wait_for(lambda: self.completed >= sent, timeout)


def produce(args: argparse.Namespace) -> int:
    topic = args.topic
    separator = args.key_separator.encode() if args.key_separator else None
    headers = [(k, v.encode()) for k, v in args.header] or None
    stdin = sys.stdin.buffer
    if stdin.isatty():
        info("reading records from stdin, one per line; Ctrl-D to finish")
    outcome = _Outcome()
    pending: collections.deque = collections.deque()
    as_json = args.format == "json"
    sent = 0
    with common.make_producer(
        args.bootstrap_server,
        acks=args.acks,
        compression_type=args.compression,
        linger_ms=args.linger_ms,
        batch_size=args.batch_size,
    ) as producer:
        _check_topic(producer, topic, args.partition)
        try:
            for key, value in read_records(stdin, separator):
                if outcome.error is not None:
                    break  # fail fast: stop reading once the cluster refuses a record
                future = producer.send(topic, value, key, partition=args.partition, headers=headers)
                future.add_done_callback(outcome)
                sent += 1
                if as_json:
                    pending.append(future)
                    _print_done(pending, block=False)
        finally:
            producer.flush()
        if as_json:
            _print_done(pending, block=True)
        outcome.wait_for(sent)
    if outcome.error is not None:
        _raise_failure(outcome.error, topic, outcome.acked, sent)
    info(f"produced {plural(outcome.acked, 'record')} to {topic}")
    return 0


def _check_topic(producer: Any, topic: str, partition: int | None) -> None:
    # Ask once up front so a typo in the topic reads as help, not as a failed future per record.
    try:
        partitions = producer.partitions_for(topic)
    except Exception as exc:
        if common.is_unknown_topic(exc):
            raise common.topic_missing(topic) from None
        raise
    if not partitions:
        raise common.topic_missing(topic)
    if partition is not None and partition not in partitions:
        raise CliError(
            f"topic '{topic}' has no partition {partition}; it has partitions "
            f"0..{max(partitions)} (add more with: kraft topic alter {topic} "
            f"--partitions {partition + 1})"
        )


def _print_done(pending: collections.deque, block: bool) -> None:
    """JSON lines in input order: print the oldest futures as they complete."""
    while pending and (block or pending[0].done()):
        future = pending.popleft()
        if future.exception() is not None:
            continue  # reported once, after the loop
        meta = future.result()
        print_json(
            {
                "topic": meta.topic,
                "partition": meta.partition,
                "offset": meta.offset,
                "timestamp": meta.timestamp,
            }
        )


def _raise_failure(error: BaseException, topic: str, acked: int, sent: int) -> None:
    if common.is_unknown_topic(error):
        raise common.topic_missing(topic) from None
    raise CliError(
        f"producing to {topic} failed after {acked} of {sent} records: "
        f"{' '.join(str(error).split())}"
    ) from error
