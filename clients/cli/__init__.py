"""The client commands of `kraft` (topic, produce, consume, group, bench, ...): each module's
register(subparsers, add_common) adds its commands to the one tree (entry/commands.py), and
`run_command` runs one, turning failures into one line of help."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import traceback

from clients.cli import common
from clients.cli.common import CliError
from clients.errors import ErrorCode, KraftError

DEFAULT_BOOTSTRAP = "127.0.0.1:9095"  # kraft dev's gRPC listener (Kafka clients: 9092)

# Codes meaning "could not talk to the cluster"; the hint says how to get one.
_UNREACHABLE = {ErrorCode.NETWORK_EXCEPTION, ErrorCode.BROKER_NOT_AVAILABLE}


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Adds --bootstrap-server, --format and --debug. Call it on leaf parsers (register does so
    for its commands): on the top parser too, a subparser's default would overwrite the value."""
    group = parser.add_argument_group("common options")
    default = os.environ.get("KRAFT_BOOTSTRAP") or DEFAULT_BOOTSTRAP
    group.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        default=default,
        help=f"brokers to contact first (env KRAFT_BOOTSTRAP; default {default})",
    )
    group.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table for people (default), json for scripts",
    )
    group.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    group.add_argument(
        "--command-config",
        metavar="FILE",
        default=os.environ.get("KRAFT_COMMAND_CONFIG"),
        help="client properties: security.protocol, sasl.mechanism, "
        "sasl.jaas.config or sasl.username/sasl.password, "
        "ssl.truststore.location, ssl.keystore.location (PEM); "
        "env KRAFT_COMMAND_CONFIG",
    )


def version_line() -> str:
    """What `kraft --version` prints: the installed package's version."""
    from clients import __version__

    return f"kraft {__version__} (Python {sys.version.split()[0]})"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be: every command stops the same
    way (a group member commits and leaves its group, a producer says what was acknowledged)."""


def _stop_gracefully(signum, frame) -> None:
    # A second Ctrl-C or SIGTERM while the first one unwinds ends the process at once: the
    # default actions come back before anything can block.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def graceful_signals():
    """While a command runs, SIGTERM (kill, docker stop, systemd) unwinds like Ctrl-C instead of
    ending the process on the spot (Python's default would leave a ghost group member behind
    until its session times out, and uncommitted positions); a second signal of either kind
    ends it at once, as a last resort should the clean stop hang."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = {s: signal.signal(s, _stop_gracefully) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_command(args: argparse.Namespace) -> int:
    """Runs args.func(args). A failure becomes one line on stderr (plus the traceback under
    --debug) and exit code 1; Ctrl-C exits 130 and SIGTERM 143, as a shell reports them, once
    the command has shut down as it does on Ctrl-C."""
    debug = getattr(args, "debug", False)
    try:
        common.use_command_config(getattr(args, "command_config", None))
        with graceful_signals():
            return int(args.func(args) or 0)
    except Terminated:
        print("terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
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
    unreachable = (
        f"cannot reach the cluster at {bootstrap} ({text}); start one with: kraft dev, "
        "or point --bootstrap-server (env KRAFT_BOOTSTRAP) at a broker"
    )
    if isinstance(exc, KraftError):
        return unreachable if exc.code in _UNREACHABLE else text
    if isinstance(exc, ConnectionError):
        return unreachable
    if isinstance(exc, TimeoutError):
        return f"timed out talking to {bootstrap}: {text}"
    return text
