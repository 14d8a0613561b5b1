"""`kraft dev`, `kraft node` and `kraft format`: the commands that start or format a node, and so
import the broker. Their errors (a bad config, a formatted dir) are one line, like the clients'."""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import uuid
from collections.abc import Callable

import trio

from broker.server.config import ServerConfigError, load_config
from broker.server.node import NodeStartError, run_until_signalled
from entry import log_format

DEV_EXAMPLES = """examples:
  kraft dev --data ./kraft-data --port 9095           # one combined node, Kafka clients on 9092
  kraft dev --port 0 --detach --data /tmp/k1          # the same in the background, on free ports
  kraft dev --controllers 3 --brokers 3               # brokers on 9095-9097, controllers on 9192-9194
  kraft dev --controllers 3 --brokers 3 --port 0 --detach --data /tmp/c1
  kraft dev --restart 5 --data /tmp/c1                # start node 5 again, e.g. after a kill -9
  kraft dev --rolling-restart --data /tmp/c1          # each broker in turn, waiting for whole ISRs
  kraft dev --secure --controllers 3 --brokers 3      # TLS + SCRAM; see DATA/client.properties
  kraft dev --stop --data /tmp/c1
"""


def _write_meta(log_dir: pathlib.Path, cluster_id: str, node_id: int) -> None:
    from kraft.log.log_manager import write_meta_properties

    log_dir.mkdir(parents=True, exist_ok=True)
    write_meta_properties(log_dir, cluster_id, node_id)


def format_dirs(config, cluster_id: str, ignore_formatted: bool) -> list[str]:
    from kraft.log.log_manager import read_meta_properties

    formatted = []
    for d in map(pathlib.Path, config.log_dirs):
        if read_meta_properties(d) is not None:
            if ignore_formatted:
                continue
            raise NodeStartError(
                f"log dir {d} is already formatted; pass --ignore-formatted to skip it"
            )
        _write_meta(d, cluster_id, config.node_id)
        formatted.append(str(d))
    if config.runs_quorum:
        _format_quorum_state(config, ignore_formatted)
    return formatted


def _format_quorum_state(config, ignore_formatted: bool) -> None:
    """A voter starts at epoch 0 with the configured voter set, in the first log dir (Kafka's
    metadata.log.dir default)."""
    from kraft.raft.disk import quorum_state_path, write_initial

    path = quorum_state_path(pathlib.Path(config.log_dirs[0]))
    if path.exists() and ignore_formatted:
        return
    try:
        write_initial(path, sorted(config.voters))
    except FileExistsError as exc:
        raise NodeStartError(f"{exc}; or pass --ignore-formatted to skip it") from None


def cmd_format(args) -> int:
    config = load_config(args.config, args.override)
    cluster_id = args.cluster_id or uuid.uuid4().hex
    done = format_dirs(config, cluster_id, args.ignore_formatted)
    print(
        f"formatted {', '.join(done) or 'nothing (already formatted)'} for cluster {cluster_id}, "
        f"node {config.node_id}"
    )
    return 0


def cmd_node(args) -> int:
    config = load_config(args.config, args.override)
    trio.run(run_until_signalled, config, log_format.announcer(args.log_format))
    exit_now()
    return 0


def exit_now() -> None:
    """End the process once the node stopped cleanly (its logs, checkpoints and quorum state are
    closed and synced): the interpreter's own teardown (its final garbage collections over the
    node's heap, grpc's finalizers) took another 0.5-2 s on a loaded machine, which every SIGTERM
    waited for, once per broker in a rolling restart. The log lines are flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _format_dev_node(config_path: pathlib.Path, cluster_id: str) -> None:
    format_dirs(load_config(str(config_path), []), cluster_id, ignore_formatted=True)


def cmd_dev(args) -> int:
    from entry import dev as dev_command
    from entry import dev_single

    _refuse_rolling_options(args)
    if (
        args.detach
        and (args.controllers, args.brokers, args.restart) == (None, None, None)
        and not args.stop
        and not args.rolling_restart
        and not args.secure
    ):
        dev_command.refuse_cluster_dir(pathlib.Path(args.data))
        return dev_single.run_detached(args)
    if (
        (args.controllers, args.brokers, args.restart) != (None, None, None)
        or args.stop
        or args.rolling_restart
        or args.detach
        or args.secure
    ):
        return dev_command.run(args, _format_dev_node)
    dev_command.refuse_cluster_dir(pathlib.Path(args.data))
    return dev_single.run_foreground(
        args, lambda config, cluster_id: format_dirs(config, cluster_id, ignore_formatted=True)
    )


def _refuse_rolling_options(args) -> None:
    """--rolling-restart's own options mean nothing to kraft dev's other modes."""
    from entry.dev_cluster import DevClusterError

    given = [
        flag
        for flag, on in (
            ("--include-controllers", args.include_controllers),
            ("--timeout", args.timeout is not None),
            ("--format", args.format is not None),
        )
        if on
    ]
    if given and not args.rolling_restart:
        raise DevClusterError(f"{given[0]} goes with --rolling-restart")


def register(
    sub: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    """dev, node and format. They talk to no cluster, so they take --override, --debug and
    --log-format instead of the clients' common options (add_common is not used)."""
    dev = sub.add_parser(
        "dev",
        help="run a local cluster: one combined node, or N controllers and M brokers",
        description="Run a local cluster on this machine, no config needed: one combined\n"
        "broker,controller node in the foreground, or with --controllers/--brokers\n"
        "one process per node (config and log in DATA/node-<id>/).",
        epilog=DEV_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dev.add_argument("--data", default="./kraft-data", help="data directory (default ./kraft-data)")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument(
        "--port",
        type=int,
        default=9095,
        help="broker port of kraft's own (gRPC) clients, default 9095; a cluster's brokers "
        "take PORT, PORT+1, ... (0 picks free ports for all)",
    )
    dev.add_argument(
        "--kafka-port",
        type=int,
        default=None,
        metavar="PORT",
        help="port of the Kafka wire listener, for Kafka's own clients (kcat, "
        "confluent-kafka, ...): default 9092 with the default --port, else free",
    )
    dev.add_argument(
        "--controllers",
        type=int,
        metavar="N",
        help="controller-only nodes, ids 1..N (1-9; odd: 3 survive one failure)",
    )
    dev.add_argument("--brokers", type=int, metavar="M", help="broker-only nodes, ids N+1..N+M")
    dev.add_argument(
        "--controller-port",
        type=int,
        default=9192,
        metavar="PORT",
        help="first controller port (default 9192; 0 picks free ones)",
    )
    dev.add_argument(
        "--detach",
        action="store_true",
        help="return once the cluster is ready and leave it running",
    )
    dev.add_argument(
        "--wait-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the cluster to be ready (default 60)",
    )
    dev.add_argument(
        "--secure",
        action="store_true",
        help="TLS everywhere: a dev CA and a certificate per node (mTLS between nodes), "
        "SASL_SSL with SCRAM for clients, user admin with its password in "
        "DATA/client.properties (a cluster: 1 controller, 1 broker by default)",
    )
    dev.add_argument("--stop", action="store_true", help="stop the cluster running from --data")
    dev.add_argument(
        "--restart",
        type=int,
        metavar="ID",
        help="start node ID of the cluster in --data again (e.g. after a kill -9)",
    )
    dev.add_argument(
        "--rolling-restart",
        action="store_true",
        help="restart the cluster's brokers one at a time (SIGTERM: controlled shutdown), "
        "each once the previous one is registered and every ISR is whole again",
    )
    dev.add_argument(
        "--include-controllers",
        action="store_true",
        help="with --rolling-restart: the controllers too, after the brokers (the quorum "
        "leader last), each once the quorum has a leader and the restarted one caught up",
    )
    dev.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --rolling-restart: how long each node may take to stop, rejoin and be "
        "caught up (default 120)",
    )
    dev.add_argument(
        "--format",
        choices=("text", "json"),
        default=None,
        help="with --rolling-restart: json prints a summary (seconds per node to stop, to "
        "rejoin, to a whole ISR)",
    )
    dev.set_defaults(func=cmd_dev)

    node = sub.add_parser(
        "node",
        help="run one node from a server.properties file",
        epilog="example:\n  kraft node --config server.properties --override node.id=2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    node.add_argument("--config", required=True, help="path to server.properties")
    node.set_defaults(func=cmd_node)

    fmt = sub.add_parser(
        "format",
        help="format a node's log dirs (writes meta.properties)",
        epilog="example:\n  kraft format --config server.properties --cluster-id my-cluster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fmt.add_argument("--config", help="path to server.properties")
    fmt.add_argument("--cluster-id", help="cluster id (default: a new random one)")
    fmt.add_argument(
        "--ignore-formatted", action="store_true", help="skip dirs that are already formatted"
    )
    fmt.set_defaults(func=cmd_format)

    for p in (dev, node, fmt):
        p.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="set a server.properties key (repeatable)",
        )
        p.add_argument("--debug", action="store_true", help="debug logging and full tracebacks")
        p.add_argument(
            "--log-format",
            choices=log_format.FORMATS,
            default=os.environ.get(log_format.ENV) or "text",
            help=f"log lines as text (default) or one JSON object each (env {log_format.ENV})",
        )
        p.set_defaults(runner=run_node_command)


def _user_errors() -> tuple[type[BaseException], ...]:
    from kraft.raft.disk import CorruptSnapshotError, MetadataLogError, QuorumStateError

    return (
        ServerConfigError,
        NodeStartError,
        ValueError,
        OSError,
        QuorumStateError,
        MetadataLogError,
        CorruptSnapshotError,
    )


def _sole_cause(exc: BaseException) -> BaseException:
    """trio's nurseries wrap errors in exception groups; a group of one is that one error."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def run_node_command(args: argparse.Namespace) -> int:
    """Runs args.func(args) with the node's logging set up; a user's error is one line, exit 1."""
    if args.log_format not in log_format.FORMATS:  # from the environment: argparse skips it
        print(
            f"kraft {args.command}: {log_format.ENV}={args.log_format!r}: use text or json",
            file=sys.stderr,
        )
        return 1
    log_format.configure(args.log_format, args.debug)
    os.environ[log_format.ENV] = args.log_format  # kraft dev's node processes inherit it
    try:
        return args.func(args)
    except BaseException as exc:  # noqa: BLE001 - sorted below; unknown ones are re-raised
        cause = _sole_cause(exc)
        if args.debug or not isinstance(cause, _user_errors()):
            raise
        print(f"kraft {args.command}: {cause}", file=sys.stderr)
        return 1
