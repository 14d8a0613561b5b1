"""`kraft acl add|remove|list`: ACLs with kafka-acls' options (--allow-principal, --operation,
--topic, --group, --cluster, --resource-pattern-type, --force), as tables or JSON."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable

from clients.acl_admin import (
    CLUSTER_NAME,
    OPERATIONS,
    PATTERN_TYPES,
    AclEntry,
    AclFilter,
    canonical,
)
from clients.cli import common
from clients.cli.common import CliError, add_leaf
from clients.cli.output import info, plural, print_json, print_table

_HEADERS = [
    "PRINCIPAL",
    "HOST",
    "OPERATION",
    "PERMISSION",
    "RESOURCE-TYPE",
    "RESOURCE-NAME",
    "PATTERN",
]


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    acl = subparsers.add_parser(
        "acl",
        help="add, remove and list ACLs (used when authorizer.class.name is set)",
        description="Add, remove and list ACLs, stored in the metadata log. They are enforced "
        "by brokers whose authorizer.class.name is set.",
        epilog="examples:\n  kraft acl add --allow-principal User:alice --operation Write "
        "--topic orders\n  kraft acl list --topic orders\n"
        "  kraft acl remove --allow-principal User:alice --topic orders --force",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = acl.add_subparsers(dest="acl_command", metavar="COMMAND", required=True)
    p = add_leaf(
        sub,
        "add",
        help="allow or deny principals operations on resources",
        func=add,
        add_common=add_common,
        examples=(
            "kraft acl add --allow-principal User:alice --operation Write --topic orders\n"
            "kraft acl add --allow-principal User:bob --operation Read --topic logs- "
            "--resource-pattern-type prefixed --group billing\n"
            "kraft acl add --deny-principal User:mallory --operation All --topic '*'"
        ),
    )
    _principals(p)
    _resources(p, patterns=("literal", "prefixed"))
    p = add_leaf(
        sub,
        "remove",
        help="remove the ACLs matching the options",
        func=remove,
        add_common=add_common,
        examples=(
            "kraft acl remove --allow-principal User:alice --operation Write "
            "--topic orders --force\nkraft acl remove --topic orders --force"
        ),
    )
    _principals(p)
    _resources(p, patterns=("literal", "prefixed", "any"))
    p.add_argument("--force", action="store_true", help="do not ask before removing")
    p = add_leaf(
        sub,
        "list",
        help="list ACLs, all or those of a resource or principal",
        func=list_acls,
        add_common=add_common,
        examples=(
            "kraft acl list\nkraft acl list --topic orders --resource-pattern-type match\n"
            "kraft acl list --principal User:alice --format json"
        ),
    )
    _resources(p, patterns=("any", "literal", "prefixed", "match"))
    p.add_argument("--principal", help="only ACLs of this principal (e.g. User:alice)")


def _principals(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="principal to allow (User:alice, User:* for everyone); repeatable",
    )
    p.add_argument(
        "--deny-principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="principal to deny; repeatable",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="host the allowed principals may connect from (default: any, '*')",
    )
    p.add_argument(
        "--deny-host",
        action="append",
        default=[],
        metavar="HOST",
        help="host the denied principals are denied from (default: any, '*')",
    )
    p.add_argument(
        "--operation",
        action="append",
        default=[],
        metavar="OPERATION",
        help=f"one of {', '.join(o for o in OPERATIONS if o != 'Any')} (default All); repeatable",
    )


def _resources(p: argparse.ArgumentParser, patterns: tuple[str, ...]) -> None:
    p.add_argument("--topic", action="append", default=[], help="a topic ('*': all); repeatable")
    p.add_argument("--group", action="append", default=[], help="a consumer group; repeatable")
    p.add_argument(
        "--transactional-id", action="append", default=[], help="a transactional id; repeatable"
    )
    p.add_argument("--cluster", action="store_true", help="the cluster itself")
    p.add_argument(
        "--resource-pattern-type",
        choices=patterns,
        default=patterns[0],
        help=f"how names match (default {patterns[0]}; prefixed: names starting with it)",
    )


def _resource_list(args: argparse.Namespace) -> list[tuple[str, str]]:
    found = (
        [("Topic", t) for t in args.topic]
        + [("Group", g) for g in args.group]
        + [("TransactionalId", t) for t in args.transactional_id]
    )
    if args.cluster:
        found.append(("Cluster", CLUSTER_NAME))
    return found


def _operations(args: argparse.Namespace) -> list[str]:
    return [canonical(OPERATIONS, op, "operation") for op in args.operation] or ["All"]


def _pattern(args: argparse.Namespace, rtype: str) -> str:
    # The cluster is one literal resource, whatever pattern the other resources use.
    return (
        "Literal"
        if rtype == "Cluster"
        else canonical(PATTERN_TYPES, args.resource_pattern_type, "pattern")
    )


def _entries(args: argparse.Namespace) -> list[AclEntry]:
    resources = _resource_list(args)
    if not resources:
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster")
    if not args.allow_principal and not args.deny_principal:
        raise CliError("name a principal: --allow-principal User:NAME or --deny-principal")
    out = []
    for permission, principals, hosts in (
        ("Allow", args.allow_principal, args.allow_host),
        ("Deny", args.deny_principal, args.deny_host),
    ):
        for principal in principals:
            for host in hosts or ["*"]:
                for rtype, name in resources:
                    for op in _operations(args):
                        out.append(
                            AclEntry(
                                rtype, name, principal, op, permission, host, _pattern(args, rtype)
                            )
                        )
    return out


def _rows(entries: list[AclEntry]) -> list[list[str]]:
    return [
        [
            e.principal,
            e.host,
            e.operation,
            e.permission,
            e.resource_type,
            e.resource_name,
            e.pattern_type,
        ]
        for e in entries
    ]


def _show(args: argparse.Namespace, entries: list[AclEntry]) -> None:
    if args.format == "json":
        print_json([dataclasses.asdict(e) for e in entries])
    else:
        print_table(_HEADERS, _rows(entries))


def add(args: argparse.Namespace) -> int:
    entries = _entries(args)
    with common.make_admin(args.bootstrap_server) as admin:
        admin.create_acls(entries)
    _show(args, entries)
    return 0


def _remove_filters(args: argparse.Namespace) -> list[AclFilter]:
    resources = _resource_list(args)
    if not resources:
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster")
    principals = (
        [("Allow", p) for p in args.allow_principal] + [("Deny", p) for p in args.deny_principal]
    ) or [("Any", None)]
    operations = _operations(args) if args.operation else ["Any"]
    filters = []
    for permission, principal in principals:
        hosts = (args.allow_host if permission == "Allow" else args.deny_host) or [None]
        for host in hosts:
            for rtype, name in resources:
                for op in operations:
                    filters.append(
                        AclFilter(
                            rtype, name, principal, op, permission, host, _pattern(args, rtype)
                        )
                    )
    return filters


def remove(args: argparse.Namespace) -> int:
    filters = _remove_filters(args)
    if not args.force:
        if not sys.stdin.isatty():
            raise CliError("removing ACLs needs confirmation; add --force to remove them")
        answer = input(f"remove the ACLs matching {len(filters)} filter(s)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            info("nothing removed")
            return 1
    with common.make_admin(args.bootstrap_server) as admin:
        removed = admin.delete_acls(filters)
    if args.format != "json":
        info(f"removed {plural(len(removed), 'ACL')}")
    _show(args, removed)
    return 0


def list_acls(args: argparse.Namespace) -> int:
    resources = _resource_list(args)
    pattern = canonical(PATTERN_TYPES, args.resource_pattern_type, "pattern")
    filters = [
        AclFilter(
            rtype, name, args.principal, pattern_type="Literal" if rtype == "Cluster" else pattern
        )
        for rtype, name in resources
    ] or [AclFilter(principal=args.principal)]
    found: dict[AclEntry, None] = {}
    with common.make_admin(args.bootstrap_server) as admin:
        for acl_filter in filters:
            found.update(dict.fromkeys(admin.describe_acls(acl_filter)))
    _show(args, list(found))
    return 0
