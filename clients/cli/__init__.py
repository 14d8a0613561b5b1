"""The client commands of `kraft` (topic, produce, consume, group, bench): `register` adds them to the
integrator's argparse tree and `run_command` runs one, turning failures into one line of help."""
from __future__ import annotations

import argparse
import os
import sys
import traceback

from clients.errors import ErrorCode, KraftError
from clients.cli.common import CliError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

# Codes meaning "could not talk to the cluster"; the hint says how to get one.
_UNREACHABLE = {ErrorCode.NETWORK_EXCEPTION, ErrorCode.BROKER_NOT_AVAILABLE}


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Adds --bootstrap-server, --format and --debug. Call it on leaf parsers (register does so
    for its commands): on the top parser too, a subparser's default would overwrite the value."""
    group = parser.add_argument_group("common options")
    default = os.environ.get("KRAFT_BOOTSTRAP") or DEFAULT_BOOTSTRAP
    group.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", default=default,
                       help=f"brokers to contact first (env KRAFT_BOOTSTRAP; default {default})")
    group.add_argument("--format", choices=("table", "json"), default="table",
                       help="table for people (default), json for scripts")
    group.add_argument("--debug", action="store_true", help="show tracebacks of failures")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds topic (create|list|describe|alter|delete), produce, consume, group
    (list|describe|reset-offsets|delete), bench (produce|consume), quorum describe, cluster info,
    acl (add|remove|list) and doctor; every leaf parser gets set_defaults(func=f) with f(args) ->
    exit code."""
    from clients.cli import acl, bench, cluster, consume, doctor, group, produce, quorum, topic
    topic.register(subparsers, add_common_options)
    produce.register(subparsers, add_common_options)
    consume.register(subparsers, add_common_options)
    group.register(subparsers, add_common_options)
    bench.register(subparsers, add_common_options)
    quorum.register(subparsers, add_common_options)
    cluster.register(subparsers, add_common_options)
    acl.register(subparsers, add_common_options)
    doctor.register(subparsers, add_common_options)


def run_command(args: argparse.Namespace) -> int:
    """Runs args.func(args). A failure becomes one line on stderr (plus the traceback under
    --debug) and exit code 1; Ctrl-C exits 130 like a shell would report it."""
    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `kraft consume t | head` closed our stdout: not an error. Point stdout at /dev/null so
        # the interpreter's final flush does not complain a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (KraftError, CliError, ValueError, OSError) as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {describe_error(exc, args)}", file=sys.stderr)
        return 1


def describe_error(exc: BaseException, args: argparse.Namespace) -> str:
    """One line: what happened and, where we know it, what to do about it."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    bootstrap = getattr(args, "bootstrap_server", DEFAULT_BOOTSTRAP)
    unreachable = (f"cannot reach the cluster at {bootstrap} ({text}); start one with: kraft dev, "
                   "or point --bootstrap-server (env KRAFT_BOOTSTRAP) at a broker")
    if isinstance(exc, KraftError):
        return unreachable if exc.code in _UNREACHABLE else text
    if isinstance(exc, ConnectionError):
        return unreachable
    if isinstance(exc, TimeoutError):
        return f"timed out talking to {bootstrap}: {text}"
    return text
