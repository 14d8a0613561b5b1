"""`kraft topic create|list|describe|alter|delete|elect-leaders`: topic administration through the
Admin client, printed as tables (or JSON with --format json)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.cli import common, topic_elect
from clients.cli.common import CliError, add_leaf, key_value, positive_int
from clients.cli.output import format_summary, info, print_json, print_table
from clients.errors import ErrorCode, KraftError


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    topic = subparsers.add_parser(
        "topic",
        help="create, list, describe, alter and delete topics; elect leaders",
        description="Create, list, describe, alter and delete topics; elect partition leaders.",
        epilog="examples:\n  kraft topic create orders -p 6 -r 3 -c retention.ms=86400000\n"
        "  kraft topic list\n  kraft topic describe orders\n"
        "  kraft topic elect-leaders --all-topics",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = topic.add_subparsers(dest="topic_command", metavar="COMMAND", required=True)

    p = add_leaf(
        sub,
        "create",
        help="create topics",
        func=create,
        add_common=add_common,
        examples="kraft topic create orders\n"
        "kraft topic create orders payments -p 6 -r 3 -c cleanup.policy=compact",
    )
    p.add_argument("names", nargs="+", metavar="NAME")
    p.add_argument(
        "-p",
        "--partitions",
        type=positive_int,
        default=-1,
        metavar="N",
        help="partitions per topic (default: the cluster's num.partitions)",
    )
    p.add_argument(
        "-r",
        "--replication-factor",
        type=positive_int,
        default=-1,
        metavar="N",
        help="replicas per partition (default: the cluster's default.replication.factor)",
    )
    p.add_argument(
        "-c",
        "--config",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config; repeat for more",
    )

    p = add_leaf(
        sub,
        "list",
        help="list topics",
        func=list_topics,
        add_common=add_common,
        examples="kraft topic list\nkraft topic list --internal --format json",
    )
    p.add_argument("-i", "--internal", action="store_true", help="include internal topics")

    p = add_leaf(
        sub,
        "describe",
        help="show a topic's configs and partitions (leader, ISR, "
        "high watermark, each replica's log end offset)",
        func=describe,
        add_common=add_common,
        examples="kraft topic describe orders\nkraft topic describe orders --format json",
    )
    p.add_argument("name", metavar="NAME")

    p = add_leaf(
        sub,
        "alter",
        help="change a topic's configs or add partitions",
        func=alter,
        add_common=add_common,
        examples="kraft topic alter orders --set retention.ms=3600000 "
        "--delete cleanup.policy\n"
        "kraft topic alter orders --partitions 12",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "--set",
        dest="set_configs",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config; repeat for more",
    )
    p.add_argument(
        "--delete",
        dest="delete_configs",
        action="append",
        default=[],
        metavar="KEY",
        help="return a config to its default; repeat for more",
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="new total partition count (can only grow)",
    )

    p = add_leaf(
        sub,
        "delete",
        help="delete topics and their data",
        func=delete,
        add_common=add_common,
        examples="kraft topic delete orders payments",
    )
    p.add_argument("names", nargs="+", metavar="NAME")

    topic_elect.add_parser(sub, add_common)


def create(args: argparse.Namespace) -> int:
    configs = dict(args.config)
    results = []
    with common.make_admin(args.bootstrap_server) as admin:
        # One request per topic so each gets its own status line, as rpk does.
        for name in args.names:
            try:
                admin.create_topics(
                    [common.new_topic(name, args.partitions, args.replication_factor, configs)]
                )
                results.append((name, None))
            except KraftError as exc:
                if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                    results.append((name, f"topic '{name}' already exists"))
                else:
                    results.append((name, str(exc)))
    return _report(args, results, "created")


def delete(args: argparse.Namespace) -> int:
    results = []
    with common.make_admin(args.bootstrap_server) as admin:
        for name in args.names:
            try:
                admin.delete_topics([name])
                results.append((name, None))
            except KraftError as exc:
                missing = common.is_unknown_topic(exc)
                results.append((name, f"topic '{name}' does not exist" if missing else str(exc)))
    return _report(args, results, "deleted")


def _report(args: argparse.Namespace, results: list[tuple[str, str | None]], verb: str) -> int:
    if args.format == "json":
        print_json(
            [{"name": n, "status": verb if e is None else "error", "error": e} for n, e in results]
        )
    else:
        print_table(
            ["TOPIC", "STATUS"], [(n, verb.upper() if e is None else e) for n, e in results]
        )
    return 1 if any(e is not None for _, e in results) else 0


def list_topics(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        topics = [t for t in admin.describe_topics() if args.internal or not t.is_internal]
    rows = [
        {"name": t.name, "partitions": len(t.partitions), "replicas": _replicas(t)}
        for t in sorted(topics, key=lambda t: t.name)
    ]
    if args.format == "json":
        print_json(rows)
    else:
        print_table(["NAME", "PARTITIONS", "REPLICAS"], [list(r.values()) for r in rows])
    return 0


def _replicas(description: Any) -> int:
    return max((len(p.replicas) for p in description.partitions), default=0)


def describe(args: argparse.Namespace) -> int:
    name = args.name
    with common.make_admin(args.bootstrap_server) as admin:
        try:
            found = [t for t in admin.describe_topics([name]) if t.name == name]
        except KraftError as exc:
            if common.is_unknown_topic(exc):
                raise common.topic_missing(name) from None
            raise
        if not found:
            raise common.topic_missing(name)
        topic = found[0]
        configs = admin.describe_configs(name)
        tps = [common.topic_partition(name, p.partition) for p in topic.partitions]
        # Offsets come from each partition's leader: metadata knows who leads, not how far.
        states = admin.describe_partitions(tps) if tps else {}
    partitions = []
    for p, tp in sorted(zip(topic.partitions, tps), key=lambda pair: pair[0].partition):
        partitions.append(
            {
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                **_offsets(states.get(tp), name, p.partition),
            }
        )
    entries = [configs[k] for k in sorted(configs)]
    if args.format == "json":
        print_json(
            {
                "name": name,
                "is_internal": topic.is_internal,
                "partitions": partitions,
                "configs": {e.name: e.value for e in entries},
            }
        )
        return 0
    print("SUMMARY")
    print(
        format_summary(
            [
                ("NAME", name),
                ("INTERNAL", topic.is_internal),
                ("PARTITIONS", len(partitions)),
                ("REPLICAS", _replicas(topic)),
            ]
        )
    )
    print("\nCONFIGS")
    print_table(
        ["KEY", "VALUE", "SOURCE"],
        [(e.name, e.value, "DEFAULT" if e.is_default else _source(e)) for e in entries],
    )
    print("\nPARTITIONS")
    print_table(
        [
            "PARTITION",
            "LEADER",
            "EPOCH",
            "REPLICAS",
            "ISR",
            "LOG-START",
            "HIGH-WATERMARK",
            "LOG-END",
            "REPLICA-LOG-ENDS",
        ],
        [
            (
                p["partition"],
                p["leader"],
                p["leader_epoch"],
                p["replicas"],
                p["isr"],
                p["log_start_offset"],
                p["high_watermark"],
                p["log_end_offset"],
                [f"{r}:{o}" for r, o in p["replica_log_end_offsets"].items()],
            )
            for p in partitions
        ],
    )
    return 0


def _offsets(state: Any, topic: str, partition: int) -> dict[str, Any]:
    """The leader's offsets for describe; None where it could not tell (and a warning why)."""
    why = None
    if state is None:
        why = "no broker answered"
    elif state.error_code:
        why = state.error_message
    elif state.role != "leader":
        why = f"leadership is moving (to broker {state.leader}); run describe again"
    if why is not None:
        info(f"warning: {topic}-{partition}: offsets unknown: {why}")
        return {
            "high_watermark": None,
            "log_start_offset": None,
            "log_end_offset": None,
            "replica_log_end_offsets": {},
        }
    return {
        "high_watermark": state.high_watermark,
        "log_start_offset": state.log_start_offset,
        "log_end_offset": state.log_end_offset,
        "replica_log_end_offsets": {
            str(r): o for r, o in sorted(state.replica_log_end_offsets.items())
        },
    }


def _source(entry: Any) -> str:
    source = getattr(entry, "source", None)
    return str(getattr(source, "name", source) or "TOPIC")


def alter(args: argparse.Namespace) -> int:
    set_configs = dict(args.set_configs)
    if not (set_configs or args.delete_configs or args.partitions):
        raise CliError(
            "nothing to change; pass --set KEY=VALUE, --delete KEY or --partitions N "
            f"(e.g. kraft topic alter {args.name} --set retention.ms=3600000)"
        )
    clash = set(set_configs) & set(args.delete_configs)
    if clash:
        raise CliError(f"config {sorted(clash)[0]!r} is both set and deleted; choose one")
    with common.make_admin(args.bootstrap_server) as admin:
        try:
            if set_configs or args.delete_configs:
                admin.alter_configs(args.name, set=set_configs, delete=list(args.delete_configs))
            if args.partitions:
                admin.create_partitions({args.name: args.partitions})
        except KraftError as exc:
            if common.is_unknown_topic(exc):
                raise common.topic_missing(args.name) from None
            raise
    if args.format == "json":
        print_json(
            {
                "name": args.name,
                "set": set_configs,
                "delete": list(args.delete_configs),
                "partitions": args.partitions,
            }
        )
        return 0
    changes = [f"set {k}={v}" for k, v in set_configs.items()]
    changes += [f"deleted {k}" for k in args.delete_configs]
    if args.partitions:
        changes.append(f"partitions now {args.partitions}")
    print(f"altered topic {args.name}: " + "; ".join(changes))
    return 0
