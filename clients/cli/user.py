"""`kraft user add|delete|list`: SCRAM users (Kafka's kafka-configs --alter --add-config
'SCRAM-SHA-256=[password=...]'); the password is salted and iterated here, never sent."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from clients.cli import common
from clients.cli.common import CliError, add_leaf
from clients.cli.output import print_json, print_table
from clients.scram import DEFAULT_ITERATIONS, HASHES, MAX_ITERATIONS, MIN_ITERATIONS


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    user = subparsers.add_parser(
        "user",
        help="SCRAM users: add (or change a password), delete, list",
        description="SCRAM users for SASL_SSL listeners (SCRAM-SHA-256 / SCRAM-SHA-512).",
        epilog="examples:\n  kraft user add alice --password-stdin --command-config admin.properties"
        " < alice.pw\n  kraft user list",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = user.add_subparsers(dest="user_command", metavar="COMMAND", required=True)
    add = add_leaf(
        sub,
        "add",
        help="create a user or change its password",
        func=add_user,
        add_common=add_common,
        examples="kraft user add alice --password-stdin --command-config "
        "admin.properties < alice.pw\n"
        "kraft user add bob --password s3cret --mechanism SCRAM-SHA-512 "
        "--iterations 8192",
    )
    add.add_argument("name")
    add.add_argument("--password", help="the password (visible in `ps`: prefer --password-stdin)")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input",
    )
    add.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"PBKDF2 iterations, {MIN_ITERATIONS}-{MAX_ITERATIONS} (default {DEFAULT_ITERATIONS})",
    )
    delete = add_leaf(
        sub,
        "delete",
        help="delete a user's credential",
        func=delete_user,
        add_common=add_common,
        examples="kraft user delete alice",
    )
    delete.add_argument("name")
    for p in (add, delete):
        p.add_argument(
            "--mechanism",
            choices=sorted(HASHES),
            default="SCRAM-SHA-256",
            help="default SCRAM-SHA-256",
        )
    listing = add_leaf(
        sub,
        "list",
        help="list users and their mechanisms (never keys)",
        func=list_users,
        add_common=add_common,
        examples="kraft user list\nkraft user list alice --format json",
    )
    listing.add_argument("names", nargs="*", metavar="NAME")


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif args.password is not None:
        password = args.password
    else:
        raise CliError("give the password with --password-stdin (or --password)")
    if not password:
        raise CliError("the password is empty")
    return password


def add_user(args: argparse.Namespace) -> int:
    password = _password(args)
    with common.make_admin(args.bootstrap_server) as admin:
        admin.upsert_user_scram_credential(args.name, password, args.mechanism, args.iterations)
    print(f"user {args.name}: {args.mechanism} credential set ({args.iterations} iterations)")
    return 0


def delete_user(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        admin.delete_user_scram_credential(args.name, args.mechanism)
    print(f"user {args.name}: {args.mechanism} credential deleted")
    return 0


def list_users(args: argparse.Namespace) -> int:
    with common.make_admin(args.bootstrap_server) as admin:
        users = admin.describe_user_scram_credentials(args.names or None)
    rows = [
        {"user": name, "mechanism": mechanism, "iterations": iterations}
        for name, credentials in sorted(users.items())
        for mechanism, iterations in credentials
    ]
    if args.format == "json":
        print_json(rows)
    else:
        print_table(
            ("USER", "MECHANISM", "ITERATIONS"),
            [(r["user"], r["mechanism"], r["iterations"]) for r in rows],
        )
    return 0
