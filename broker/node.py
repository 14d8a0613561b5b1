"""One node process: opens its log dirs, serves the Broker and Controller services over gRPC (and
Quorum on the controller listener when it is a voter), runs the periodic log jobs (retention,
flush, checkpoints) and shuts down cleanly on SIGTERM/SIGINT (checkpoints written, clean-shutdown
marker left, so the next start skips recovery)."""
from __future__ import annotations

import functools
import logging
import pathlib
import signal
from typing import Callable

import trio

from broker import broker_servicer, controller_servicer
from broker.broker_servicer import BrokerServicer, wall_clock_ms
from broker.config import ServerConfig
from broker.controller_quorum import ControllerQuorum, metadata_dir
from broker.controller_servicer import ControllerServicer
from broker.replica_manager import ReplicaManager
from broker.topic_admin import TopicAdmin
from broker.topic_store import TopicStore
from clients.bridge import serve_async_servicer, start_server, stop_server
from clients.wire import broker_pb2_grpc, controller_pb2_grpc
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager, read_meta_properties
from kraft.raft.disk import quorum_state_path

log = logging.getLogger(__name__)


class NodeStartError(RuntimeError):
    """The node cannot start; the message says why and what to do."""


def check_formatted(config: ServerConfig) -> str:
    """The cluster id shared by every log dir; refuses unformatted or mismatched dirs."""
    cluster_ids = set()
    for d in config.log_dirs:
        meta = read_meta_properties(pathlib.Path(d))
        if meta is None:
            raise NodeStartError(f"log dir {d} is not formatted; run: kraft format --config <server.properties>")
        if int(meta.get("node.id", -1)) != config.node_id:
            raise NodeStartError(f"log dir {d} belongs to node {meta.get('node.id')}, but node.id is "
                                 f"{config.node_id}; fix node.id or point log.dirs elsewhere")
        cluster_ids.add(meta.get("cluster.id", ""))
    if len(cluster_ids) != 1:
        raise NodeStartError(f"log dirs disagree on cluster.id ({', '.join(sorted(cluster_ids))})")
    if config.runs_quorum and not quorum_state_path(metadata_dir(config)).exists():
        raise NodeStartError(f"log dir {metadata_dir(config)} has no quorum-state; "
                             f"run: kraft format --config <server.properties> --ignore-formatted")
    return cluster_ids.pop()


async def _every(interval_ms: int, job: Callable[[int], object], clock_ms: Callable[[], int]) -> None:
    while True:
        await trio.sleep(interval_ms / 1000)
        job(clock_ms())


async def run_node(config: ServerConfig, *, announce: Callable[[str], None] = print,
                   clock_ms: Callable[[], int] = wall_clock_ms,
                   task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run until cancelled. `task_status.started(port)` once the node serves requests (the broker
    port, or the controller port of a controller-only node)."""
    cluster_id = check_formatted(config)
    for key in config.unknown_keys:
        log.warning("config key %r is not used by kraft; ignored", key)
    # A controller in a configured quorum serves Quorum; only a controller-only one skips the broker.
    serves_broker = not (config.runs_quorum and config.process_roles == ("controller",))
    quorum = ControllerQuorum(config) if config.runs_quorum else None
    try:
        async with trio.open_nursery() as nursery:
            listening = []     # the first address is the one clients and tests read
            if serves_broker:
                port = await nursery.start(_run_broker, config, cluster_id, clock_ms)
                listening.append(f"listening on {config.host}:{port}")
            if quorum is not None:
                controller_port = await nursery.start(quorum.serve)
                controller = f"{config.controller_listener[0]}:{controller_port}"
                if serves_broker:
                    listening.append(f"controller on {controller}")
                else:
                    port = controller_port
                    listening.append(f"listening on {controller}")
            announce(f"kraft node {config.node_id} ({','.join(config.process_roles)}) "
                     f"{', '.join(listening)}, cluster {cluster_id}, data in {', '.join(config.log_dirs)}")
            task_status.started(port)
    finally:
        if quorum is not None:
            quorum.close()
        log.info("node %d stopped cleanly", config.node_id)


async def _run_broker(config: ServerConfig, cluster_id: str, clock_ms: Callable[[], int], *,
                      task_status=trio.TASK_STATUS_IGNORED) -> None:
    """The Broker and Controller services and the periodic log jobs; `started(port)`."""
    log_dirs = [pathlib.Path(d) for d in config.log_dirs]
    log_manager = LogManager(log_dirs, LogConfig.from_props(config.topic_defaults), now_ms=clock_ms())
    try:
        replicas = ReplicaManager(log_manager, config.node_id)
        admin = TopicAdmin(TopicStore(log_dirs[0]), replicas, config)
        admin.open_all()
        token = trio.lowlevel.current_trio_token()
        holder: dict[str, BrokerServicer] = {}

        def register(server) -> None:
            brokers = BrokerServicer(replicas, admin, node_id=config.node_id, host=config.host,
                                     port=config.port, cluster_id=cluster_id, rack=config.rack,
                                     auto_create=config.auto_create_topics_enable, clock_ms=clock_ms)
            holder["broker"] = brokers
            serve_async_servicer(brokers, broker_pb2_grpc.add_BrokerServicer_to_server, server, token,
                                 broker_servicer.METHODS)
            serve_async_servicer(ControllerServicer(admin), controller_pb2_grpc.add_ControllerServicer_to_server,
                                 server, token, controller_servicer.METHODS)

        server, port = start_server(f"{config.host}:{config.port}", register)
        holder["broker"].node.port = port   # port 0 picks one: advertise the real one
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_every, config.retention_check_interval_ms, log_manager.cleanup, clock_ms)
                nursery.start_soon(_every, config.flush_scheduler_interval_ms, log_manager.flush_due, clock_ms)
                nursery.start_soon(_every, config.checkpoint_interval_ms, lambda _now: log_manager.checkpoint(),
                                   clock_ms)
                task_status.started(port)
                await trio.sleep_forever()
        finally:
            await stop_server(server, grace=0.5)
    finally:
        log_manager.close()


async def run_until_signalled(config: ServerConfig, announce: Callable[[str], None] = print) -> None:
    """Run the node until SIGTERM or SIGINT (Ctrl-C), then stop it cleanly."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(run_node, config, announce=announce))

            async def stop_on_signal() -> None:
                async for signum in signals:
                    announce(f"received {signal.Signals(signum).name}, stopping")
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(stop_on_signal)
