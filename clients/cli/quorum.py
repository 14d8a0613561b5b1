"""`kraft quorum describe`: the KRaft metadata quorum as its leader sees it (leader, epoch, high
watermark, each voter's log end offset, lag and ms since its last fetch), asked of the
controllers' Quorum service."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import trio

from clients.cli.common import CliError, add_leaf
from clients.cli.output import format_summary, print_json, print_table
from clients.errors import KraftError
from clients.quorum_info import QuorumInfo, ask_quorum

DEFAULT_CONTROLLER = "127.0.0.1:9093"


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    quorum = subparsers.add_parser(
        "quorum",
        help="describe the controllers' metadata quorum",
        description="Describe the controllers' KRaft metadata quorum, through a broker (which asks "
        "the controllers) or straight from the controllers.",
        epilog="examples:\n  kraft quorum describe --bootstrap-server 127.0.0.1:9092\n"
        "  kraft quorum describe --bootstrap-controller 127.0.0.1:9093,127.0.0.1:9094",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = quorum.add_subparsers(dest="quorum_command", metavar="COMMAND", required=True)
    p = add_leaf(
        sub,
        "describe",
        help="show the quorum's leader, epoch and voters",
        func=describe,
        add_common=add_common,
        examples="kraft quorum describe --bootstrap-server 127.0.0.1:9092\n"
        "kraft quorum describe --bootstrap-controller 127.0.0.1:9093\n"
        "kraft quorum describe --bootstrap-controller h1:9093,h2:9093 --format json",
    )
    p.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        default=None,
        help="controllers to ask instead of brokers (e.g. "
        f"{DEFAULT_CONTROLLER}); the leader's answer wins",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="per-node request timeout (default 3)",
    )


async def describe_quorum(
    addresses: list[str],
    timeout: float,
    option: str = "--bootstrap-controller",
    security: Any = None,
) -> QuorumInfo:
    """The leader's view if any node asked is (or reaches) the leader, else the first answer.
    `security`: a ClientSecurity for callers other than the CLI (default: --command-config's)."""
    from clients.bridge import open_channel
    from clients.cli.common import command_security

    security = security or command_security()
    try:
        return await ask_quorum(addresses, timeout, lambda a: open_channel(a, security))
    except KraftError as exc:
        where = (
            "the controllers' CONTROLLER listeners"
            if option == "--bootstrap-controller"
            else "brokers"
        )
        raise CliError(f"{exc.message}; check {option} points at {where}") from None


def quorum_json(info: Any) -> dict:
    """`last_fetch_ms` keeps its name for scripts written against it; it is an age: ms since the
    leader last heard a fetch from that replica (0 for the leader, None: never in this epoch)."""

    def replica(r: Any) -> dict:
        return {
            "id": r.replica_id,
            "log_end_offset": r.log_end_offset,
            "lag": max(0, info.log_end_offset - r.log_end_offset),
            "last_fetch_ms": r.last_fetch_ms,
        }

    return {
        "answered_by": info.node_id,
        "role": info.role,
        "leader_id": info.leader_id,
        "leader_epoch": info.leader_epoch,
        "high_watermark": info.high_watermark,
        "log_end_offset": info.log_end_offset,
        "voters": [replica(r) for r in info.voters],
        "observers": [replica(r) for r in info.observers],
    }


def describe(args: argparse.Namespace) -> int:
    # Kafka's kafka-metadata-quorum: through the brokers unless told to ask the controllers.
    option, given = (
        ("--bootstrap-server", args.bootstrap_server)
        if args.bootstrap_controller is None
        else ("--bootstrap-controller", args.bootstrap_controller)
    )
    addresses = [a.strip() for a in given.split(",") if a.strip()]
    if not addresses:
        raise CliError(f"{option} is empty; give host:port[,...]")
    out = quorum_json(trio.run(describe_quorum, addresses, args.timeout, option))
    if args.format == "json":
        print_json(out)
        return 0
    print(
        format_summary(
            [
                ("LeaderId", out["leader_id"]),
                ("LeaderEpoch", out["leader_epoch"]),
                ("HighWatermark", out["high_watermark"]),
                ("AnsweredBy", f"{out['answered_by']} ({out['role']})"),
            ]
        )
    )
    rows = [
        (r["id"], "Voter", r["log_end_offset"], r["lag"], r["last_fetch_ms"]) for r in out["voters"]
    ]
    rows += [
        (r["id"], "Observer", r["log_end_offset"], r["lag"], r["last_fetch_ms"])
        for r in out["observers"]
    ]
    if rows:
        print()
        print_table(("NodeId", "Status", "LogEndOffset", "Lag", "LastFetchAgoMs"), rows)
    return 0
