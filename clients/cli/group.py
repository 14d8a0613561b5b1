"""`kraft group list|describe|reset-offsets|delete`: consumer groups through the Admin client
(members, partitions, committed offsets and lag), as tables or JSON (--format json)."""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable
from typing import Any

from clients.cli import common
from clients.cli.common import CliError, add_leaf, non_negative_int
from clients.cli.output import format_summary, info, print_json, print_table
from clients.errors import KraftError

# Kafka's group states in which the group has no members: only then may offsets be reset.
_INACTIVE = ("Empty", "Dead")


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    group = subparsers.add_parser(
        "group",
        help="list, describe and delete consumer groups; reset their offsets",
        description="List, describe and delete consumer groups; reset their committed offsets.",
        epilog="examples:\n  kraft group list\n  kraft group describe billing\n"
        "  kraft group reset-offsets billing --topic orders --to-earliest --dry-run\n"
        "  kraft group delete billing",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="group_command", metavar="COMMAND", required=True)

    p = add_leaf(
        sub,
        "list",
        help="list the consumer groups of every broker",
        func=list_groups,
        add_common=add_common,
        examples="kraft group list\nkraft group list --state Stable --format json",
    )
    p.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only groups in this state (Empty, Stable, PreparingRebalance, "
        "CompletingRebalance); repeatable",
    )

    p = add_leaf(
        sub,
        "describe",
        help="show a group's state, members, partitions, committed offsets and lag",
        func=describe,
        add_common=add_common,
        examples="kraft group describe billing\nkraft group describe billing --format json",
    )
    p.add_argument("group", metavar="GROUP")

    p = add_leaf(
        sub,
        "reset-offsets",
        help="set a group's committed offsets (only while the group has no members)",
        func=reset_offsets,
        add_common=add_common,
        examples="kraft group reset-offsets billing --topic orders --to-earliest\n"
        "kraft group reset-offsets billing --topic orders:0,1 --to-offset 42\n"
        "kraft group reset-offsets billing --topic orders "
        "--to-datetime 2026-11-22T08:00:00Z --dry-run",
    )
    p.add_argument("group", metavar="GROUP")
    p.add_argument(
        "--topic",
        dest="topics",
        type=topic_spec,
        action="append",
        required=True,
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions; repeatable",
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="each partition's log start")
    to.add_argument("--to-latest", action="store_true", help="each partition's log end")
    to.add_argument(
        "--to-offset",
        type=non_negative_int,
        metavar="N",
        help="offset N (kept within each partition's log start and end)",
    )
    to.add_argument(
        "--to-datetime",
        type=timestamp_ms,
        metavar="YYYY-MM-DDTHH:MM:SS[.sss][Z]",
        help="the first record at or after this time (no zone: local time)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="show the new offsets without changing anything"
    )

    p = add_leaf(
        sub,
        "delete",
        help="delete groups that have no members, with their offsets",
        func=delete,
        add_common=add_common,
        examples="kraft group delete billing\nkraft group delete billing audit",
    )
    p.add_argument("groups", nargs="+", metavar="GROUP")


def topic_spec(text: str) -> tuple[str, list[int] | None]:
    """`orders` or `orders:0,2` -> (topic, partitions or None for all)."""
    topic, sep, parts = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:P,P..., got {text!r}")
    if not sep:
        return topic, None
    try:
        return topic, sorted({non_negative_int(p.strip()) for p in parts.split(",") if p.strip()})
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"partitions must be numbers, as in orders:0,2; got {text!r}"
        ) from None


def timestamp_ms(text: str) -> int:
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date and time like 2026-11-22T08:00:00 or 2026-11-22T08:00:00.000Z, "
            f"got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as Kafka's tool reads it
    return int(when.timestamp() * 1000)


# --- list -----------------------------------------------------------------------------------


def list_groups(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        groups = admin.list_groups(args.state or None)
    rows = [
        {
            "group_id": g.group_id,
            "state": g.state,
            "protocol_type": g.protocol_type,
            "coordinator": g.coordinator,
        }
        for g in groups
    ]
    if args.format == "json":
        print_json(rows)
    elif not rows:
        info("no consumer groups" + (f" in state {', '.join(args.state)}" if args.state else ""))
    else:
        print_table(
            ["GROUP", "STATE", "COORDINATOR"],
            [(r["group_id"], r["state"], r["coordinator"]) for r in rows],
        )
    return 0


# --- describe -------------------------------------------------------------------------------


def _describe_one(admin: Any, group_id: str) -> Any:
    [desc] = admin.describe_groups([group_id], include_offsets=True)
    if not desc.exists:
        raise CliError(f"group '{group_id}' does not exist; see: kraft group list")
    return desc


def describe(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        desc = _describe_one(admin, args.group)
        rows = _partition_rows(admin, desc)
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "group_instance_id": m.group_instance_id,
            "client_host": m.client_host,
            "partitions": [{"topic": tp[0], "partition": tp[1]} for tp in m.partitions],
        }
        for m in desc.members
    ]
    if args.format == "json":
        print_json(
            {
                "group_id": desc.group_id,
                "state": desc.state,
                "protocol_type": desc.protocol_type,
                "protocol": desc.protocol,
                "generation": desc.generation,
                "coordinator": desc.coordinator,
                "leader": desc.leader,
                "members": members,
                "offsets": rows,
            }
        )
        return 0
    lags = [r["lag"] for r in rows if r["lag"] is not None]
    print(
        format_summary(
            [
                ("GROUP", desc.group_id),
                ("COORDINATOR", desc.coordinator),
                ("STATE", desc.state),
                ("PROTOCOL", desc.protocol or None),
                ("GENERATION", desc.generation),
                ("MEMBERS", len(desc.members)),
                ("TOTAL-LAG", sum(lags) if lags else None),
            ]
        )
    )
    if rows:
        print()
        print_table(
            [
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "MEMBER-ID",
                "CLIENT-ID",
            ],
            [
                (
                    r["topic"],
                    r["partition"],
                    r["committed_offset"],
                    r["log_end_offset"],
                    r["lag"],
                    r["member_id"],
                    r["client_id"],
                )
                for r in rows
            ],
        )
    return 0


def _partition_rows(admin: Any, desc: Any) -> list[dict]:
    """One row per partition the group owns or has committed, with its owner; log ends the
    coordinator did not know are asked of the partitions' leaders."""
    owner = {tuple(tp): m for m in desc.members for tp in m.partitions}
    committed = {(o.topic, o.partition): o for o in desc.offsets}
    keys = sorted(set(owner) | set(committed))
    missing = [
        common.topic_partition(*k)
        for k in keys
        if committed.get(k) is None or committed[k].log_end_offset is None
    ]
    ends: dict = {}
    if missing:
        try:
            ends = {
                tuple(tp): o
                for tp, o in admin.list_offsets({tp: "latest" for tp in missing}).items()
            }
        except (KraftError, OSError) as exc:
            info(f"warning: log end offsets unknown for {len(missing)} partitions: {exc}")
    rows = []
    for k in keys:
        o, m = committed.get(k), owner.get(k)
        offset = o.offset if o is not None else None
        end = o.log_end_offset if o is not None and o.log_end_offset is not None else ends.get(k)
        if o is not None and o.lag is not None:
            lag = o.lag
        else:
            lag = max(0, end - offset) if end is not None and offset is not None else None
        rows.append(
            {
                "topic": k[0],
                "partition": k[1],
                "committed_offset": offset,
                "log_end_offset": end,
                "lag": lag,
                "member_id": m.member_id if m else None,
                "client_id": m.client_id if m else None,
            }
        )
    return rows


# --- reset-offsets --------------------------------------------------------------------------


def reset_offsets(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        [desc] = admin.describe_groups([args.group], include_offsets=False)
        if desc.state not in _INACTIVE or desc.members:
            raise CliError(
                f"group '{args.group}' is {desc.state} with "
                f"{len(desc.members)} member(s); offsets can only be reset while it "
                "has none: stop its consumers first (see: kraft group describe "
                f"{args.group})"
            )
        tps = _chosen_partitions(admin, args.topics)
        old = admin.list_group_offsets(args.group)
        new = _targets(admin, args, tps)
        if not args.dry_run:
            admin.alter_group_offsets(args.group, new)
    rows = [
        {"topic": tp[0], "partition": tp[1], "old_offset": old.get(tp), "new_offset": new[tp]}
        for tp in tps
    ]
    if args.format == "json":
        print_json({"group_id": args.group, "dry_run": args.dry_run, "offsets": rows})
        return 0
    print_table(
        ["TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"],
        [(r["topic"], r["partition"], r["old_offset"], r["new_offset"]) for r in rows],
    )
    info(
        f"dry run: nothing changed; run again without --dry-run to reset group {args.group}"
        if args.dry_run
        else f"reset the offsets of group {args.group}"
    )
    return 0


def _chosen_partitions(admin: Any, topics: list) -> list:
    out = []
    for topic, wanted in topics:
        available = common.topic_partitions(admin, topic)
        for p in wanted or available:
            if p not in available:
                raise CliError(
                    f"topic '{topic}' has no partition {p}; its partitions are 0..{available[-1]}"
                )
            out.append(common.topic_partition(topic, p))
    return sorted(set(out))


def _targets(admin: Any, args: argparse.Namespace, tps: list) -> dict:
    if args.to_earliest:
        return admin.list_offsets({tp: "earliest" for tp in tps})
    latest = admin.list_offsets({tp: "latest" for tp in tps})
    if args.to_latest:
        return latest
    if args.to_datetime is not None:
        found = admin.list_offsets({tp: args.to_datetime for tp in tps})
        # No record at or after that time: the log end, where the next record will be.
        return {tp: found[tp] if found.get(tp, -1) >= 0 else latest[tp] for tp in tps}
    earliest = admin.list_offsets({tp: "earliest" for tp in tps})
    out = {}
    for tp in tps:
        target = min(max(args.to_offset, earliest[tp]), latest[tp])
        if target != args.to_offset:
            info(
                f"warning: {tp[0]}-{tp[1]}: offset {args.to_offset} is outside "
                f"{earliest[tp]}..{latest[tp]}; using {target}"
            )
        out[tp] = target
    return out


# --- delete ---------------------------------------------------------------------------------


def delete(args: argparse.Namespace) -> int:
    results = []
    with common.make_admin(args.bootstrap_server) as admin:
        for g in args.groups:
            try:
                admin.delete_groups([g])
                results.append((g, None))
            except KraftError as exc:
                results.append((g, exc.message or str(exc)))
    if args.format == "json":
        print_json(
            [
                {"group_id": g, "status": "deleted" if e is None else "error", "error": e}
                for g, e in results
            ]
        )
    else:
        print_table(["GROUP", "STATUS"], [(g, "DELETED" if e is None else e) for g, e in results])
    return 1 if any(e is not None for _, e in results) else 0
