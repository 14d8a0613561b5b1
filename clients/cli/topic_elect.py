"""`kraft topic elect-leaders`: move partition leadership back to the preferred replicas (or, unclean,
give leaderless partitions any live replica) through the controller's ElectLeaders."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.cli import common
from clients.cli.common import CliError, add_leaf
from clients.cli.output import print_json, print_table
from clients.errors import ErrorCode

TYPES = ("preferred", "unclean")


def add_parser(
    sub: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        sub,
        "elect-leaders",
        help="move partition leadership to the preferred replicas (or, unclean, to any "
        "live replica of a leaderless partition)",
        func=elect_leaders,
        add_common=add_common,
        examples="kraft topic elect-leaders orders\n"
        "kraft topic elect-leaders orders:0 payments:3 --type preferred\n"
        "kraft topic elect-leaders --all-topics --format json\n"
        "kraft topic elect-leaders orders:2 --type unclean",
    )
    p.add_argument(
        "partitions",
        nargs="*",
        type=partition_arg,
        metavar="TOPIC[:PARTITION]",
        help="a topic (all its partitions) or one partition; repeat for more",
    )
    p.add_argument(
        "--all-topics",
        action="store_true",
        help="every partition of every topic (those already as asked are not listed)",
    )
    p.add_argument(
        "--type",
        dest="election_type",
        choices=TYPES,
        default="preferred",
        help="preferred (default): the first replica leads again if it is in sync; "
        "unclean: a partition without a leader takes any live replica, even one "
        "out of sync (acknowledged records may be lost)",
    )


def partition_arg(text: str) -> tuple[str, int | None]:
    """argparse type for TOPIC or TOPIC:PARTITION (topic names cannot contain ':')."""
    topic, sep, partition = text.rpartition(":")
    if not sep:
        return text, None
    if not topic or not partition.isdigit():
        raise argparse.ArgumentTypeError(
            f"expected TOPIC or TOPIC:PARTITION (e.g. orders:0), got {text!r}"
        )
    return topic, int(partition)


def elect_leaders(args: argparse.Namespace) -> int:
    if bool(args.partitions) == args.all_topics:
        raise CliError(
            "name partitions (TOPIC or TOPIC:PARTITION) or pass --all-topics, not "
            + ("both" if args.all_topics else "neither")
            + " (e.g. kraft topic elect-leaders orders)"
        )
    with common.make_admin(args.bootstrap_server) as admin:
        wanted = None if args.all_topics else _expand(admin, args.partitions)
        results = admin.elect_leaders(args.election_type, wanted)
    rows = [_row(r) for r in results]
    if args.format == "json":
        print_json(rows)
    elif not rows:
        print(
            "no partition needed an election"
            + (
                ": every one is led by its preferred replica"
                if args.election_type == "preferred"
                else ": every one has a leader"
            )
        )
    else:
        # "-" spelled out: a column of only None would be taken as numeric and right-aligned.
        print_table(
            ["TOPIC", "PARTITION", "STATUS", "DETAIL"],
            [(r["topic"], r["partition"], r["status"].upper(), r["message"] or "-") for r in rows],
        )
    return 1 if any(r["status"] == "failed" for r in rows) else 0


def _expand(admin: Any, wanted: list[tuple[str, int | None]]) -> list:
    """TOPIC:PARTITION as given; a bare TOPIC becomes all of its partitions (in order, once)."""
    out: list = []
    partitions_of: dict[str, list[int]] = {}
    for topic, partition in wanted:
        if partition is not None:
            out.append(common.topic_partition(topic, partition))
            continue
        if topic not in partitions_of:
            partitions_of[topic] = common.topic_partitions(admin, topic)
        out.extend(common.topic_partition(topic, p) for p in partitions_of[topic])
    return list(dict.fromkeys(out))


def _row(result: Any) -> dict[str, Any]:
    code = result.error_code
    status = (
        "elected"
        if code == 0
        else ("not-needed" if code == ErrorCode.ELECTION_NOT_NEEDED else "failed")
    )
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = str(code)
    return {
        "topic": result.topic,
        "partition": result.partition,
        "status": status,
        "error": None if code == 0 else name,
        "message": result.error_message or None,
    }
