"""`kraft cluster info`: the cluster as a broker's Metadata answer shows it (cluster id, active
controller, registered brokers), like `rpk cluster info`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.cli import common
from clients.cli.common import add_leaf
from clients.cli.output import format_summary, plural, print_json, print_table


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    cluster = subparsers.add_parser(
        "cluster",
        help="show the cluster: its id, active controller and brokers",
        description="Show the cluster: its id, active controller and brokers.",
        epilog="example:\n  kraft cluster info --bootstrap-server 127.0.0.1:9095",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)
    add_leaf(
        sub,
        "info",
        help="show the cluster id, the active controller and the brokers",
        func=info,
        add_common=add_common,
        examples="kraft cluster info\n"
        "kraft cluster info --bootstrap-server 127.0.0.1:9095 --format json",
    )


def cluster_json(described: dict[str, Any]) -> dict[str, Any]:
    """Metadata's -1 ("no controller known") becomes null, which scripts test more easily."""
    controller = described.get("controller_id")
    return {
        "cluster_id": described.get("cluster_id") or None,
        "controller_id": controller if controller is not None and controller >= 0 else None,
        "brokers": [
            {"id": b["id"], "host": b["host"], "port": b["port"], "rack": b.get("rack") or None}
            for b in sorted(described.get("brokers", []), key=lambda b: b["id"])
        ],
    }


def info(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        out = cluster_json(admin.describe_cluster())
    if args.format == "json":
        print_json(out)
        return 0
    print(
        format_summary(
            [
                ("CLUSTER-ID", out["cluster_id"]),
                (
                    "CONTROLLER",
                    out["controller_id"] if out["controller_id"] is not None else "none known",
                ),
                ("BROKERS", plural(len(out["brokers"]), "broker")),
            ]
        )
    )
    if out["brokers"]:
        print()
        print_table(
            ("ID", "HOST", "PORT", "RACK"),
            [(b["id"], b["host"], b["port"], b["rack"]) for b in out["brokers"]],
        )
    return 0
