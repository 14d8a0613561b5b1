"""`kraft transactions list|describe|abort`: transactional producers' transactions through the
Admin client (who coordinates each id, its state, producer id and epoch, its partitions), and the
abort of a hanging one on a partition, as kafka-transactions.sh; tables or JSON (--format json)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from clients.cli import common
from clients.cli.common import CliError, add_leaf, non_negative_int
from clients.cli.output import format_summary, info, print_json, print_table
from clients.errors import ErrorCode, KraftError


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    txn = subparsers.add_parser(
        "transactions",
        help="list and describe transactions; abort a hanging one",
        description="List and describe the transactions of transactional producers; abort a "
        "hanging transaction on one partition.",
        epilog="examples:\n  kraft transactions list\n  kraft transactions describe app-1\n"
        "  kraft transactions abort --topic orders --partition 0 --producer-id 4000 "
        "--producer-epoch 3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = txn.add_subparsers(dest="transactions_command", metavar="COMMAND", required=True)

    p = add_leaf(
        sub,
        "list",
        help="list the transactional ids every broker coordinates",
        func=list_transactions,
        add_common=add_common,
        examples="kraft transactions list\nkraft transactions list --state Ongoing --format json",
    )
    p.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only transactions in this state (Empty, Ongoing, PrepareCommit, "
        "PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence, Dead); "
        "repeatable",
    )
    p.add_argument(
        "--producer-id",
        dest="producer_ids",
        action="append",
        default=[],
        type=non_negative_int,
        metavar="ID",
        help="only this producer id; repeatable",
    )

    p = add_leaf(
        sub,
        "describe",
        help="show a transactional id's state, producer id and epoch, "
        "timeout, start time and partitions",
        func=describe,
        add_common=add_common,
        examples="kraft transactions describe app-1\n"
        "kraft transactions describe app-1 --format json",
    )
    p.add_argument("transactional_id", metavar="TRANSACTIONAL-ID")

    p = add_leaf(
        sub,
        "abort",
        help="abort a hanging transaction on one partition (an ABORT marker written by its leader)",
        func=abort,
        add_common=add_common,
        examples="kraft transactions abort --topic orders --partition 0 "
        "--producer-id 4000 --producer-epoch 3\n"
        "kraft transactions abort --topic orders --partition 0 "
        "--producer-id 4000 --producer-epoch 3 --coordinator-epoch 7",
    )
    p.add_argument("--topic", required=True, metavar="TOPIC")
    p.add_argument("--partition", required=True, type=non_negative_int, metavar="N")
    p.add_argument("--producer-id", required=True, type=non_negative_int, metavar="ID")
    p.add_argument("--producer-epoch", required=True, type=non_negative_int, metavar="EPOCH")
    p.add_argument(
        "--coordinator-epoch",
        default=0,
        type=non_negative_int,
        metavar="EPOCH",
        help="the coordinator epoch to write in the marker (default 0)",
    )


# --- list -----------------------------------------------------------------------------------


def list_transactions(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        listed = admin.list_transactions(args.state or None, args.producer_ids or None)
    rows = [
        {
            "transactional_id": t.transactional_id,
            "coordinator": t.coordinator,
            "producer_id": t.producer_id,
            "state": t.state,
        }
        for t in listed
    ]
    if args.format == "json":
        print_json(rows)
    elif not rows:
        info("no transactions" + (f" in state {', '.join(args.state)}" if args.state else ""))
    else:
        print_table(
            ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"],
            [(r["transactional_id"], r["coordinator"], r["producer_id"], r["state"]) for r in rows],
        )
    return 0


# --- describe -------------------------------------------------------------------------------


def describe(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        try:
            [desc] = admin.describe_transactions([args.transactional_id])
        except KraftError as exc:
            if exc.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                raise CliError(
                    f"transactional id '{args.transactional_id}' does not exist; "
                    "see: kraft transactions list"
                ) from None
            raise
    started = desc.transaction_start_time_ms
    duration = max(0, int(time.time() * 1000) - started) if started >= 0 else None
    partitions = [{"topic": tp[0], "partition": tp[1]} for tp in desc.partitions]
    if args.format == "json":
        print_json(
            {
                "transactional_id": desc.transactional_id,
                "coordinator": desc.coordinator,
                "state": desc.state,
                "producer_id": desc.producer_id,
                "producer_epoch": desc.producer_epoch,
                "transaction_timeout_ms": desc.transaction_timeout_ms,
                "transaction_start_time_ms": started if started >= 0 else None,
                "transaction_duration_ms": duration,
                "partitions": partitions,
            }
        )
        return 0
    print(
        format_summary(
            [
                ("TRANSACTIONAL-ID", desc.transactional_id),
                ("COORDINATOR", desc.coordinator),
                ("STATE", desc.state),
                ("PRODUCER-ID", desc.producer_id),
                ("PRODUCER-EPOCH", desc.producer_epoch),
                ("TIMEOUT-MS", desc.transaction_timeout_ms),
                ("START-TIME-MS", started if started >= 0 else None),
                ("DURATION-MS", duration),
                ("PARTITIONS", [f"{tp[0]}-{tp[1]}" for tp in desc.partitions]),
            ]
        )
    )
    return 0


# --- abort ----------------------------------------------------------------------------------


def abort(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        admin.abort_transaction(
            args.topic,
            args.partition,
            args.producer_id,
            args.producer_epoch,
            args.coordinator_epoch,
        )
    result = {
        "topic": args.topic,
        "partition": args.partition,
        "producer_id": args.producer_id,
        "producer_epoch": args.producer_epoch,
        "status": "aborted",
    }
    if args.format == "json":
        print_json(result)
    else:
        print_table(
            ["TOPIC", "PARTITION", "PRODUCER-ID", "PRODUCER-EPOCH", "STATUS"],
            [(args.topic, args.partition, args.producer_id, args.producer_epoch, "ABORTED")],
        )
    return 0
