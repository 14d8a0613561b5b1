"""`kraft doctor`: asks the cluster what it knows (Metadata, groups and their lag) and says in
plain words what is wrong and what to do; exit code 1 when anything is, --format json for scripts."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.cli import common
from clients.cli.common import add_leaf
from clients.cli.output import print_json
from clients.diagnosis import GroupView, PartitionView, Problem, diagnose


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    p = add_leaf(
        subparsers,
        "doctor",
        help="check the cluster and say in plain words what is wrong: no active "
        "controller, brokers down, partitions offline or under-replicated, "
        "groups behind",
        func=doctor,
        add_common=add_common,
        examples="kraft doctor\n"
        "kraft doctor --bootstrap-server 127.0.0.1:9092 --format json\n"
        "kraft doctor --max-lag 1000      # groups may be up to 1000 records behind",
    )
    p.add_argument(
        "--max-lag",
        type=int,
        default=0,
        metavar="RECORDS",
        help="report a group once it is more than this many records behind (default 0)",
    )


def gather(admin: Any) -> tuple[dict, list[PartitionView], list[GroupView]]:
    cluster = admin.describe_cluster()
    partitions = [
        PartitionView(t.name, p.partition, p.leader, tuple(p.replicas), tuple(p.isr))
        for t in admin.describe_topics()
        for p in t.partitions
    ]
    groups = []
    listings = admin.list_groups()
    if listings:
        for g in admin.describe_groups([listing.group_id for listing in listings]):
            groups.append(
                GroupView(
                    g.group_id,
                    g.state,
                    len(g.members),
                    {f"{o.topic}-{o.partition}": o.lag for o in g.offsets if o.lag is not None},
                )
            )
    return cluster, partitions, groups


def doctor(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        cluster, partitions, groups = gather(admin)
    controller = cluster.get("controller_id")
    controller = controller if controller is not None and controller >= 0 else None
    live = [b["id"] for b in cluster.get("brokers", [])]
    problems = diagnose(controller, live, partitions, groups, args.max_lag)
    if args.format == "json":
        print_json(
            {
                "healthy": not problems,
                "cluster_id": cluster.get("cluster_id") or None,
                "controller_id": controller,
                "live_brokers": sorted(live),
                "partitions": len(partitions),
                "groups": len(groups),
                "problems": [p.to_json() for p in problems],
            }
        )
    else:
        _print_text(controller, live, partitions, groups, problems)
    return 1 if problems else 0


def _print_text(controller, live, partitions, groups, problems: list[Problem]) -> None:
    print(
        f"controller: {controller if controller is not None else 'none'}; live brokers: "
        f"{', '.join(map(str, sorted(live))) or 'none'}; {len(partitions)} partitions; "
        f"{len(groups)} groups"
    )
    if not problems:
        print("ok: no problem found")
        return
    for p in problems:
        print(f"problem: {p.message}")
