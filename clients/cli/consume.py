"""`kraft consume TOPIC`: reads chosen partitions from a chosen offset, or shares the topic as a
member of a consumer group (--group, committing as it goes), and prints values, KEY<TAB>VALUE
lines or JSON lines, until a count, an idle timeout or Ctrl-C."""

from __future__ import annotations

import argparse
import base64
import sys
import time
from collections.abc import Callable
from typing import Any

from clients.cli import common
from clients.cli.common import CliError, add_leaf, non_negative_int, positive_int
from clients.cli.output import dumps, info, plural

_now = time.monotonic  # swapped in tests


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        subparsers,
        "consume",
        help="print records of a topic",
        func=consume,
        add_common=add_common,
        examples="kraft consume orders --from-beginning\n"
        "kraft consume orders --partition 0,2 --offset 100 --max-messages 10\n"
        "kraft consume orders --from-beginning --timeout-ms 2000 --format json\n"
        "kraft consume orders --group billing --from-beginning",
    )
    p.add_argument("topic", metavar="TOPIC")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at each partition's log start (same as --offset earliest)",
    )
    start.add_argument(
        "--offset",
        type=start_offset,
        default="latest",
        metavar="N|earliest|latest",
        help="where to start in every chosen partition (default latest)",
    )
    p.add_argument(
        "--partition",
        dest="partitions",
        type=partition_list,
        action="append",
        metavar="N[,N...]",
        help="partitions to read; repeatable (default: all)",
    )
    p.add_argument(
        "--group",
        metavar="GROUP",
        help="read as a member of this consumer group: the group shares the "
        "partitions among its members and commits positions (auto-commit, and "
        "on exit), so the next run goes on where this one stopped; "
        "--from-beginning then applies only where nothing is committed",
    )
    p.add_argument("--max-messages", type=positive_int, metavar="N", help="exit after N records")
    p.add_argument(
        "--timeout-ms",
        type=positive_int,
        metavar="MS",
        help="exit when nothing arrives for this long (default: wait for Ctrl-C; "
        "with --group, counted from when the group gives this member "
        "partitions)",
    )
    p.add_argument("--print-key", action="store_true", help="print KEY<SEP>VALUE (text format)")
    p.add_argument(
        "--key-separator",
        default="\t",
        metavar="SEP",
        help="separator for --print-key (default: a tab)",
    )
    p.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed: only committed transactions' records, up to the last "
        "stable offset (default: read_uncommitted, every record)",
    )
    p.add_argument(
        "--fetch-max-bytes",
        type=positive_int,
        default=52428800,
        metavar="BYTES",
        help="most bytes one fetch returns (default 50 MiB)",
    )


def start_offset(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"offset must be a number, earliest or latest, got {text!r}"
        ) from None


def partition_list(text: str) -> list[int]:
    return [non_negative_int(part.strip()) for part in text.split(",") if part.strip()]


def render_bytes(data: bytes | None) -> tuple[str | None, bool]:
    """(text, is_base64): UTF-8 when the bytes are valid UTF-8, else base64 so JSON stays exact."""
    if data is None:
        return None, False
    try:
        return bytes(data).decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), True


def record_json(record: Any) -> dict:
    out: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
    }
    for name in ("key", "value"):
        text, b64 = render_bytes(getattr(record, name))
        out[name] = text
        if b64:
            out[f"{name}_encoding"] = "base64"
    headers = []
    for key, value in record.headers or ():
        text, b64 = render_bytes(value)
        header = {"key": key, "value": text}
        if b64:
            header["value_encoding"] = "base64"
        headers.append(header)
    out["headers"] = headers
    return out


def record_text(record: Any, print_key: bool, separator: bytes) -> bytes:
    # Raw bytes, as stored: what was produced from a line comes back as that line.
    value = b"null" if record.value is None else bytes(record.value)
    if not print_key:
        return value + b"\n"
    key = b"null" if record.key is None else bytes(record.key)
    return key + separator + value + b"\n"


def choose_partitions(consumer: Any, topic: str, wanted: list[list[int]] | None) -> list[int]:
    try:
        available = sorted(consumer.partitions_for_topic(topic))
    except Exception as exc:
        if common.is_unknown_topic(exc):
            raise common.topic_missing(topic) from None
        raise
    if not available:
        raise common.topic_missing(topic)
    if not wanted:
        return available
    chosen = sorted({p for group in wanted for p in group})
    missing = [p for p in chosen if p not in available]
    if missing:
        raise CliError(
            f"topic '{topic}' has no partition {missing[0]}; its partitions are 0..{available[-1]}"
        )
    return chosen


def consume(args: argparse.Namespace) -> int:
    out = sys.stdout.buffer
    as_json = args.format == "json"
    separator = args.key_separator.encode()
    offset = "earliest" if args.from_beginning else args.offset
    group_options: dict[str, Any] = {}
    if args.group is not None:
        if args.partitions or offset not in ("earliest", "latest"):
            raise CliError(
                "--group shares the topic's partitions among the group's members "
                "from their committed offsets; --partition and --offset N do not "
                "apply (reset them with: kraft group reset-offsets "
                f"{args.group} --topic {args.topic} --to-offset N)"
            )
        group_options = {"group_id": args.group, "client_id": "kraft-console-consumer"}
    count = 0
    with common.make_consumer(
        args.bootstrap_server,
        fetch_max_bytes=args.fetch_max_bytes,
        isolation_level=args.isolation_level,
        # an offset below the log start falls forward, not to the end
        auto_offset_reset="latest" if offset == "latest" else "earliest",
        **group_options,
    ) as consumer:
        partitions = choose_partitions(consumer, args.topic, args.partitions)
        if args.group is not None:
            consumer.subscribe([args.topic])
        else:
            tps = [common.topic_partition(args.topic, p) for p in partitions]
            consumer.assign(tps)
            if offset == "earliest":
                consumer.seek_to_beginning(*tps)
            elif offset == "latest":
                consumer.seek_to_end(*tps)
            else:
                for tp in tps:
                    consumer.seek(tp, offset)
        last_record = _now()
        try:
            while args.max_messages is None or count < args.max_messages:
                wait_ms = 1000
                if args.group is not None and not consumer.assignment():
                    last_record = _now()  # still joining: the idle clock has not started
                if args.timeout_ms is not None:
                    left_ms = args.timeout_ms - (_now() - last_record) * 1000
                    if left_ms <= 0:
                        break
                    wait_ms = max(1, min(wait_ms, int(left_ms)))
                limit = None if args.max_messages is None else args.max_messages - count
                records = consumer.poll(timeout_ms=wait_ms, max_records=limit)
                if not records:
                    continue
                last_record = _now()
                if limit is not None:
                    records = records[:limit]  # in case the consumer ignores max_records
                for record in records:
                    # Counted before it is written: a Ctrl-C or SIGTERM lands between any two
                    # steps, and a record the reader already has must be in the summary.
                    count += 1
                    if as_json:
                        out.write(dumps(record_json(record)).encode() + b"\n")
                    else:
                        out.write(record_text(record, args.print_key, separator))
                out.flush()  # so `| grep` sees records as they arrive
        except KeyboardInterrupt:
            # Ctrl-C is the documented way to stop: say how much was read, then exit 130.
            info(f"consumed {plural(count, 'record')} from {args.topic}")
            raise
    info(f"consumed {plural(count, 'record')} from {args.topic}")
    return 0
