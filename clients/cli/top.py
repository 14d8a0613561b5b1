"""`kraft top`: a terminal view of a cluster from its nodes' metrics endpoints (cluster.json of
a kraft dev cluster, or --metrics host:port,...), refreshed every second; --once for scripts."""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import time
from collections.abc import Callable
from typing import Any

from clients import metrics_view as mv
from clients.cli.common import CliError
from clients.cli.output import format_table, print_json

_clock = time.monotonic  # swapped in tests
_sleep = time.sleep
CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    help_text = (
        "watch a cluster's nodes from their metrics endpoints: request and byte rates, "
        "leaders, under-replicated partitions, Raft, groups, memory"
    )
    p = subparsers.add_parser(
        "top",
        help=help_text,
        description=help_text,
        epilog="examples:\n"
        "  kraft top                                  # the kraft dev cluster in ./kraft-data\n"
        "  kraft top --data /tmp/dev                  # another kraft dev data dir\n"
        "  kraft top --metrics 127.0.0.1:9404,127.0.0.1:9405\n"
        "  kraft top --once --format json             # one sample, for scripts",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=top)
    add_common(p)
    p.add_argument(
        "--data",
        default="./kraft-data",
        help="a kraft dev data dir: its cluster.json names the endpoints (default ./kraft-data)",
    )
    p.add_argument(
        "--metrics",
        metavar="HOST:PORT[,...]",
        help="metrics endpoints to read instead (each node's metrics.listener)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between refreshes, and over which --once measures rates (default 1)",
    )
    p.add_argument(
        "--once", action="store_true", help="print one view (rates over --interval) and exit"
    )


def top(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CliError(f"--interval {args.interval}: give a positive number of seconds")
    try:
        targets = (
            mv.targets_from_addresses(args.metrics)
            if args.metrics
            else mv.targets_from_cluster_json(args.data)
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
        before, at = _scrape_all(pool, targets), _clock()
        while True:
            _sleep(args.interval)
            now, now_at = _scrape_all(pool, targets), _clock()
            view = build_view(targets, now, before, now_at - at)
            if args.once:
                _print(view, args.format, clear=False)
                return 0 if view["cluster"]["nodes_up"] == len(targets) else 1
            _print(view, args.format, clear=args.format != "json" and sys.stdout.isatty())
            before, at = now, now_at


def _scrape_all(pool, targets) -> list[tuple[mv.Samples | None, str | None]]:
    def one(target: mv.NodeTarget):
        try:
            return mv.scrape(target.metrics_address), None
        except OSError as exc:
            return None, str(exc)

    return list(pool.map(one, targets))


def build_view(targets, now, before, seconds: float) -> dict[str, Any]:
    nodes = [
        mv.node_view(t, samples, error, prior[0], seconds)
        for t, (samples, error), prior in zip(targets, now, before)
    ]
    return {"cluster": mv.cluster_view(nodes), "nodes": nodes}


def _print(view: dict[str, Any], fmt: str, *, clear: bool) -> None:
    if fmt == "json":
        print_json(view)
        sys.stdout.flush()
        return
    print((CLEAR if clear else "") + render_text(view), flush=True)


def _n(value, scale: float = 1.0, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value / scale:.{digits}f}"


def render_text(view: dict[str, Any]) -> str:
    c = view["cluster"]
    head = (
        f"kraft top  {time.strftime('%H:%M:%S')}  nodes up {c['nodes_up']}/{c['nodes']}  "
        f"active controller {c['active_controller'] if c['active_controller'] is not None else 'NONE'}  "
        f"fenced brokers {_n(c['fenced_brokers'])}  offline partitions {_n(c['offline_partitions'])}  "
        f"under-replicated {_n(c['under_replicated'])}  under-min-ISR {_n(c['under_min_isr'])}\n"
        f"in {_n(c['bytes_in_per_s'], 1e6, 2)} MB/s ({_n(c['records_in_per_s'])} records/s)  "
        f"out {_n(c['bytes_out_per_s'], 1e6, 2)} MB/s  requests {_n(c['requests_per_s'])}/s\n"
    )
    rows, down = [], []
    for n in view["nodes"]:
        if not n["up"]:
            rows.append(
                [n["node_id"] if n["node_id"] is not None else "?", ",".join(n["roles"]), "DOWN"]
                + ["-"] * 11
            )
            down.append(f"not answering: {n.get('error', '')}")
            continue
        raft = n["raft_state"] or "-"
        if n["active_controller"]:
            raft += "*"
        rows.append(
            [
                n["node_id"],
                ",".join(n["roles"]),
                raft,
                _n(n["raft_epoch"]),
                _n(n["metadata_lag"]),
                _n(n["requests_per_s"]),
                _n(n["bytes_in_per_s"], 1e6, 2),
                _n(n["bytes_out_per_s"], 1e6, 2),
                f"{_n(n['leaders'])}/{_n(n['partitions'])}",
                _n(n["under_replicated"]),
                _n(n["groups"]),
                _n(n["parked"]),
                _n(n["connections"]),
                _n(n["rss_bytes"], 2**20),
            ]
        )
    table = format_table(
        [
            "NODE",
            "ROLES",
            "RAFT",
            "EPOCH",
            "MD-LAG",
            "REQ/S",
            "IN-MB/S",
            "OUT-MB/S",
            "LEAD/PART",
            "URP",
            "GROUPS",
            "PARKED",
            "CONNS",
            "RSS-MB",
        ],
        rows,
    )
    return "\n".join(
        [head + table, *down, "(* active controller; MD-LAG: metadata records not yet applied)"]
    )
