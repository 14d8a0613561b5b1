"""`kraft quorum describe`: the KRaft metadata quorum as its leader sees it (leader, epoch, high
watermark, each voter's log end offset, lag and ms since its last fetch), asked of the
controllers' Quorum service."""
from __future__ import annotations

import argparse
from typing import Any, Callable

import trio

from clients.cli.common import CliError, add_leaf
from clients.cli.output import format_summary, print_json, print_table
from clients.errors import KraftError
from clients.quorum_info import QuorumInfo, quorum_info_from_proto

DEFAULT_CONTROLLER = "127.0.0.1:9093"


def register(subparsers: argparse._SubParsersAction,
             add_common: Callable[[argparse.ArgumentParser], None]) -> None:
    quorum = subparsers.add_parser(
        "quorum", help="describe the controllers' metadata quorum",
        description="Describe the controllers' KRaft metadata quorum.",
        epilog="example:\n  kraft quorum describe --bootstrap-controller 127.0.0.1:9093,127.0.0.1:9094",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = quorum.add_subparsers(dest="quorum_command", metavar="COMMAND", required=True)
    p = add_leaf(sub, "describe", help="show the quorum's leader, epoch and voters", func=describe,
                 add_common=add_common,
                 examples="kraft quorum describe --bootstrap-controller 127.0.0.1:9093\n"
                          "kraft quorum describe --bootstrap-controller h1:9093,h2:9093 --format json")
    p.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]", default=DEFAULT_CONTROLLER,
                   help=f"controllers to ask; the leader's answer wins (default {DEFAULT_CONTROLLER})")
    p.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS",
                   help="per-controller request timeout (default 3)")


async def _ask(address: str, timeout: float, security: Any = None) -> QuorumInfo:
    from clients.bridge import call, open_channel
    from clients.wire import quorum_pb2, quorum_pb2_grpc

    from clients.cli.common import command_security
    channel = open_channel(address, security or command_security())
    try:
        stub = quorum_pb2_grpc.QuorumStub(channel)
        return quorum_info_from_proto(await call(stub.DescribeQuorum, quorum_pb2.DescribeQuorumRequest(), timeout))
    finally:
        channel.close()


async def describe_quorum(addresses: list[str], timeout: float, security: Any = None) -> Any:
    """The leader's view if any controller asked is the leader, else the first answer (which
    names the leader it knows of but has no replica states). `security`: a ClientSecurity for
    callers other than the CLI (default: --command-config's)."""
    first, errors = None, []
    for address in addresses:
        try:
            info = await _ask(address, timeout, security)
        except KraftError as exc:
            from clients.bridge import is_unimplemented
            errors.append(f"{address} is a broker listener, not a controller" if
                          is_unimplemented(exc) else f"{address}: {exc}")
            continue
        if info.role == "Leader":
            return info
        first = first or info
    if first is None:
        raise CliError(f"no controller answered ({'; '.join(errors)}); check "
                       f"--bootstrap-controller points at the controllers' CONTROLLER listeners")
    return first


def quorum_json(info: Any) -> dict:
    """`last_fetch_ms` keeps its name for scripts written against it; it is an age: ms since the
    leader last heard a fetch from that replica (0 for the leader, None: never in this epoch)."""
    def replica(r: Any) -> dict:
        return {"id": r.replica_id, "log_end_offset": r.log_end_offset,
                "lag": max(0, info.log_end_offset - r.log_end_offset),
                "last_fetch_ms": r.last_fetch_ms}

    return {"answered_by": info.node_id, "role": info.role, "leader_id": info.leader_id,
            "leader_epoch": info.leader_epoch, "high_watermark": info.high_watermark,
            "log_end_offset": info.log_end_offset,
            "voters": [replica(r) for r in info.voters],
            "observers": [replica(r) for r in info.observers]}


def describe(args: argparse.Namespace) -> int:
    addresses = [a.strip() for a in args.bootstrap_controller.split(",") if a.strip()]
    if not addresses:
        raise CliError("--bootstrap-controller is empty; give host:port[,...] of the controllers")
    out = quorum_json(trio.run(describe_quorum, addresses, args.timeout))
    if args.format == "json":
        print_json(out)
        return 0
    print(format_summary([("LeaderId", out["leader_id"]), ("LeaderEpoch", out["leader_epoch"]),
                          ("HighWatermark", out["high_watermark"]),
                          ("AnsweredBy", f"{out['answered_by']} ({out['role']})")]))
    rows = [(r["id"], "Voter", r["log_end_offset"], r["lag"], r["last_fetch_ms"]) for r in out["voters"]]
    rows += [(r["id"], "Observer", r["log_end_offset"], r["lag"], r["last_fetch_ms"])
             for r in out["observers"]]
    if rows:
        print()
        print_table(("NodeId", "Status", "LogEndOffset", "Lag", "LastFetchAgoMs"), rows)
    return 0
