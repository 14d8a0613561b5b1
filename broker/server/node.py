"""One node process: the metadata quorum seat (voter or observer), the active controller when it
is a controller, the broker (partitions, Broker and Controller services, periodic log jobs, and
its registration) when it is a broker. Stops cleanly on SIGTERM/SIGINT: the broker first asks to
be fenced so leadership moves away, then checkpoints and leaves the clean-shutdown marker."""

from __future__ import annotations

import dataclasses
import functools
import logging
import pathlib
import random
import signal
from collections.abc import Callable

import trio

from broker.controller.active import ActiveController
from broker.coordinator.placement import partition_for
from broker.edge.controller_channel import ControllerChannel
from broker.group.coordinator_registry import GroupCoordinators
from broker.handlers.write_txn_markers import TxnMarkerWriter
from broker.idempotence.producer_ids import ProducerIdBlocks
from broker.kafka.backend import Backend
from broker.kafka.handlers import Dispatcher
from broker.kafka.listener import check_protocol, serve_kafka_listener
from broker.metadata.describe_quorum import BrokerDescribeQuorum
from broker.metadata.publisher import BrokerMetadata
from broker.metadata.quorum import MetadataQuorum, QuorumConfig
from broker.metadata.servicer import QuorumServicer
from broker.metrics.collectors import (
    ConnectionCollector,
    ControllerCollector,
    GroupCollector,
    QuorumCollector,
    ReplicaCollector,
)
from broker.metrics.endpoint import NodeMetrics
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.isr_updates import IsrUpdates
from broker.replication.replica_manager import ReplicaManager, monotonic_ms
from broker.security.request_authorizer import RequestAuthorizer
from broker.security.sessions import SessionTable
from broker.server.config import ServerConfig, ServerConfigError
from broker.server.heap import pin_mmap_threshold, release_free_heap_periodically, share_one_arena
from broker.server.lifecycle import BrokerEpoch, BrokerLifecycle
from broker.server.listeners import listener_server, node_channel_opener, serve_broker_listeners
from broker.services import controller_servicer
from broker.services.broker_servicer import BrokerServicer, wall_clock_ms
from broker.services.group_servicer import GroupServicer
from broker.services.transaction_servicer import TransactionServicer
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.markers import BrokerChannels
from broker.transaction.verification import TxnVerifier
from clients.wire import broker_pb2, controller_pb2, group_pb2, quorum_pb2, transaction_pb2
from kraft.controller.controller import QuorumController
from kraft.controller.controller_config import ControllerConfig
from kraft.log.dir_lock import DirLocked, lock_dirs, release_all
from kraft.log.fd_limit import raise_fd_limit
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager, fsync_all, read_meta_properties, write_checkpoints
from kraft.raft import RaftConfig
from kraft.raft.disk import quorum_state_path

log = logging.getLogger(__name__)

# How often leaders look for followers that fell out of sync (replica.lag.time.max.ms is 30 s).
ISR_CHECK_MS = 250
# A broker not serving after this long says what it waits for (controllers down or unreachable).
WAITING_NOTICE_S = 3.0


class NodeStartError(RuntimeError):
    """The node cannot start; the message says why and what to do."""


def check_formatted(config: ServerConfig) -> str:
    """The cluster id shared by every log dir; refuses unformatted or mismatched dirs."""
    cluster_ids = set()
    for d in config.log_dirs:
        meta = read_meta_properties(pathlib.Path(d))
        if meta is None:
            raise NodeStartError(
                f"log dir {d} is not formatted; run: kraft format --config <server.properties>"
            )
        if int(meta.get("node.id", -1)) != config.node_id:
            raise NodeStartError(
                f"log dir {d} belongs to node {meta.get('node.id')}, but node.id is "
                f"{config.node_id}; fix node.id or point log.dirs elsewhere"
            )
        cluster_ids.add(meta.get("cluster.id", ""))
    if len(cluster_ids) != 1:
        raise NodeStartError(f"log dirs disagree on cluster.id ({', '.join(sorted(cluster_ids))})")
    if config.runs_quorum and not quorum_state_path(metadata_dir(config)).exists():
        raise NodeStartError(
            f"log dir {metadata_dir(config)} has no quorum-state; "
            f"run: kraft format --config <server.properties> --ignore-formatted"
        )
    return cluster_ids.pop()


def controller_config(config: ServerConfig) -> ControllerConfig:
    return ControllerConfig(
        num_partitions=config.num_partitions,
        default_replication_factor=config.default_replication_factor,
        broker_session_timeout_ms=config.broker_session_timeout_ms,
        delete_topic_enable=config.delete_topic_enable,
        topic_defaults=dict(config.topic_defaults),
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_seconds=(config.leader_imbalance_check_interval_seconds),
        leader_imbalance_per_broker_percentage=(config.leader_imbalance_per_broker_percentage),
    )


def metadata_dir(config: ServerConfig) -> pathlib.Path:
    """Kafka's metadata.log.dir defaults to the first of log.dirs; so does ours."""
    return pathlib.Path(config.log_dirs[0])


def quorum_config(config: ServerConfig) -> QuorumConfig:
    return QuorumConfig(
        config.node_id, config.voters, config.runs_quorum, metadata_dir(config), raft_config(config)
    )


def raft_config(config: ServerConfig) -> RaftConfig:
    fetch_timeout = config.quorum_fetch_timeout_ms
    try:
        # The leader parks an idle Fetch for at most a quarter of the fetch timeout, so a follower
        # always hears back well before it would give up on the leader.
        return RaftConfig(
            election_timeout_ms=config.quorum_election_timeout_ms,
            fetch_timeout_ms=fetch_timeout,
            election_backoff_max_ms=config.quorum_election_backoff_max_ms,
            request_timeout_ms=config.quorum_request_timeout_ms,
            retry_backoff_ms=config.quorum_retry_backoff_ms,
            fetch_max_wait_ms=max(1, min(500, fetch_timeout // 4)),
            snapshot_interval_entries=max(0, config.metadata_snapshot_interval_records),
        )
    except ValueError as exc:
        raise ServerConfigError(f"controller.quorum.*: {exc}") from None


async def _every(
    interval_ms: int, job: Callable[[int], object], clock_ms: Callable[[], int]
) -> None:
    while True:
        await trio.sleep(interval_ms / 1000)
        job(clock_ms())


async def _flush_every(
    interval_ms: int, log_manager: LogManager, clock_ms: Callable[[], int]
) -> None:
    """flush.ms and rolled segments: what is owed is decided on the loop, fsynced in a thread
    (Kafka's background flusher), and the recovery points move on the loop once it is done."""
    while True:
        await trio.sleep(interval_ms / 1000)
        pending = log_manager.due_flushes(clock_ms())
        if pending:
            # A failed fsync takes its log dir offline (on this loop, in flushes_done).
            log_manager.flushes_done(await trio.to_thread.run_sync(fsync_all, pending))


async def _clean_every(
    interval_ms: int, log_manager: LogManager, clock_ms: Callable[[], int]
) -> None:
    """Compaction: reading segments and writing the cleaned ones run in a thread while appends go
    on; each swap into a log's segment list runs on this loop, where appends and retention run."""
    while True:
        await trio.sleep(interval_ms / 1000)
        await log_manager.clean_compacted_off_loop(clock_ms(), trio.to_thread.run_sync)


async def _checkpoint_every(interval_ms: int, log_manager: LogManager) -> None:
    """The offsets are read on the loop that moves them; the fsyncing writes run in a thread."""
    while True:
        await trio.sleep(interval_ms / 1000)
        failed = await trio.to_thread.run_sync(write_checkpoints, log_manager.checkpoint_offsets())
        log_manager.checkpoints_failed(failed)  # those dirs go offline, on this loop


async def _snapshot_producers_every(interval_ms: int, replicas: ReplicaManager) -> None:
    """Producer state snapshots: taken on the loop, written (tmp, fsync, rename) in a thread."""
    while True:
        await trio.sleep(interval_ms / 1000)
        due = replicas.due_producer_snapshots()
        if due:
            replicas.producer_snapshots_written(
                await trio.to_thread.run_sync(replicas.write_producer_snapshots, due)
            )


@dataclasses.dataclass(frozen=True)
class BrokerStorage:
    """A broker's logs and what is built on them before the quorum (which replays into them)."""

    log_manager: LogManager
    epoch: BrokerEpoch
    replicas: ReplicaManager
    metadata: BrokerMetadata


def open_broker_storage(config: ServerConfig, now_ms: int) -> BrokerStorage:
    """The partition logs and the replicas and image over them: opened (logs recovered)
    before the metadata quorum, which replays into the image from its first entry."""
    log_dirs = [pathlib.Path(d) for d in config.log_dirs]
    log_manager = LogManager(log_dirs, LogConfig.from_props(config.topic_defaults), now_ms=now_ms)
    epoch = BrokerEpoch()  # the lifecycle writes it; replication and producer ids read it
    replicas = ReplicaManager(
        log_manager,
        config.node_id,
        broker_epoch=epoch,
        replica_lag_time_max_ms=config.replica_lag_time_max_ms,
    )
    return BrokerStorage(
        log_manager,
        epoch,
        replicas,
        BrokerMetadata(config.node_id, replicas, config.topic_defaults),
    )


def open_quorum(
    config: ServerConfig, cluster_id: str, to_controllers, broker_metadata: BrokerMetadata | None
) -> MetadataQuorum:
    """The node's seat on the metadata log, wired whole: on a controller the active controller
    (made from the quorum's driver) replays first and is what snapshots are taken of; on a
    broker its image follows (and is the snapshot source of a broker-only node)."""

    def controller(driver) -> ActiveController:
        return ActiveController(
            QuorumController(controller_config(config), rng=random.Random()), driver
        )

    listeners = (broker_metadata,) if broker_metadata is not None else ()
    return MetadataQuorum(
        quorum_config(config),
        cluster_id,
        to_controllers,
        listeners=listeners,
        controller=controller if config.runs_quorum else None,
        snapshot_source=(lambda: broker_metadata.image) if broker_metadata is not None else None,
    )


@dataclasses.dataclass(frozen=True)
class NodeReady:
    """A node that serves: what `kraft dev` records in cluster.json and the start line says."""

    node_id: int
    roles: tuple[str, ...]
    addresses: tuple[str, ...]  # the client-facing listener first, then the controller's
    cluster_id: str
    log_dirs: tuple[str, ...]
    metrics_address: str | None = None  # host:port of GET /metrics, if metrics.listener is set
    kafka_address: str | None = None  # where Kafka's own clients connect, if anywhere

    def describe(self) -> str:
        what = f"listening on {self.addresses[0]}" if self.addresses else "running (no listener)"
        if len(self.addresses) > 1:
            what += f", controller on {self.addresses[1]}"
        if self.kafka_address:
            what += f", Kafka clients on {self.kafka_address}"
        if self.metrics_address:
            what += f", metrics on http://{self.metrics_address}/metrics"
        return (
            f"kraft node {self.node_id} ({','.join(self.roles)}) {what}, cluster "
            f"{self.cluster_id}, data in {', '.join(self.log_dirs)}"
        )


class Node:
    def __init__(
        self,
        config: ServerConfig,
        *,
        announce: Callable[[str], None] = print,
        on_ready: Callable[[NodeReady], None] = lambda ready: None,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.config = config
        self.announce = announce
        self.on_ready = on_ready
        self.clock_ms = clock_ms
        self.is_broker = "broker" in config.process_roles
        self.lifecycle: BrokerLifecycle | None = None
        self.kafka_address: str | None = None  # the first Kafka wire listener's, once up
        lifetime_ms = config.security.session_lifetime_ms if config.security else 900_000
        self.sessions = SessionTable(lifetime_ms)  # SCRAM sessions of every SASL listener
        # Prometheus text on metrics.listener; None: nothing is collected or served.
        self.metrics = (
            NodeMetrics(config.node_id, tuple(config.process_roles))
            if config.metrics_listener is not None
            else None
        )
        self.listener_ports: dict[str, int] = {}  # listener name -> bound port (connections)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled. `task_status.started(port)` once the node serves: a broker once the
        controller has unfenced it (its port), a controller-only node once its listener is up."""
        config = self.config
        cluster_id = check_formatted(config)
        for key in config.unknown_keys:
            log.warning("config key %r is not used by kraft; ignored", key)
        raise_fd_limit()
        try:
            locks = lock_dirs(config.log_dirs)  # before anything in them is opened or written
        except DirLocked as exc:
            raise NodeStartError(str(exc)) from None
        storage = None
        try:
            to_controllers = node_channel_opener(config, config.controller_listener_names[0])
            storage = open_broker_storage(config, self.clock_ms()) if self.is_broker else None
            quorum = open_quorum(
                config,
                cluster_id,
                to_controllers,
                storage.metadata if storage is not None else None,
            )
        except BaseException:
            if storage is not None:
                storage.log_manager.close()
            release_all(locks)
            raise
        channel = None
        try:
            active = quorum.controller
            channel = ControllerChannel(
                quorum.voters,
                lambda: quorum.leader_id,
                active,
                to_controllers,
                leader_changed=quorum.driver.wait_leader_change,
            )
            async with trio.open_nursery() as nursery:
                listening = []
                port = None
                metrics_address = await self._start_metrics(nursery, quorum, storage)
                if config.runs_quorum and config.controller_listener is not None:
                    port = await nursery.start(self._serve_controller, quorum, active)
                    listening.append(f"{config.controller_listener[0]}:{port}")
                if self.is_broker:
                    broker_port, self.lifecycle = await nursery.start(
                        self._run_broker, cluster_id, quorum, channel, storage
                    )
                await nursery.start(quorum.run)
                if active is not None:
                    nursery.start_soon(active.run)
                if self.is_broker:
                    nursery.start_soon(self.lifecycle.run)
                    # Said only when it takes long: a normal start stays one line.
                    with trio.move_on_after(WAITING_NOTICE_S):
                        await self.lifecycle.unfenced.wait()
                    if not self.lifecycle.unfenced.is_set():
                        log.info(
                            "broker %d: waiting to be registered and unfenced by the active "
                            "controller (voters %s)",
                            config.node_id,
                            ",".join(f"{i}@{a}" for i, a in quorum.voters.items()),
                        )
                        await self.lifecycle.unfenced.wait()
                    port = broker_port
                    listening.insert(0, f"{config.host}:{broker_port}")
                ready = NodeReady(
                    config.node_id,
                    tuple(config.process_roles),
                    tuple(listening),
                    cluster_id,
                    tuple(config.log_dirs),
                    metrics_address,
                    self.kafka_address,
                )
                self.announce(ready.describe())
                self.on_ready(ready)
                task_status.started(port)
        finally:
            if channel is not None:  # None when the controller could not be built
                channel.close()
            if storage is not None:  # after the broker's tasks: nothing appends any more
                storage.log_manager.close()
            quorum.close()
            release_all(locks)
            log.info("node %d stopped cleanly", config.node_id)

    async def _start_metrics(
        self, nursery, quorum: MetadataQuorum, storage: BrokerStorage | None
    ) -> str | None:
        """Serve the metrics endpoint (before the broker waits to be unfenced: a node stuck
        there is one to look at) with the collectors of what exists already; host:port."""
        if self.metrics is None:
            return None
        metrics, config = self.metrics, self.config
        active = quorum.controller
        if active is not None:
            metrics.add(ControllerCollector(active, active.is_active))
            applied = lambda: active.last_offset  # noqa: E731
        else:
            applied = lambda: storage.metadata.image.offset  # noqa: E731
        metrics.add(QuorumCollector(quorum, config.node_id, applied, active is not None))
        if storage is not None:
            metrics.add(ReplicaCollector(storage.replicas))
        metrics.add(ConnectionCollector(self.listener_ports))
        host, port = config.metrics_listener
        port = await nursery.start(metrics.serve, host, port)
        return f"{host}:{port}"

    async def controlled_shutdown(self) -> None:
        if self.lifecycle is not None:
            await self.lifecycle.controlled_shutdown()

    async def _serve_controller(
        self,
        quorum: MetadataQuorum,
        active: ActiveController,
        *,
        task_status=trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Quorum and Controller services on the controller listener; `started(port)`."""
        host, port = self.config.controller_listener
        server = listener_server(
            self.config,
            f"{host}:{port}",
            self.config.controller_listener_name,
            self.sessions,
            controller=True,
            metrics=self.metrics,
        )
        server.add_servicer(QuorumServicer(quorum.driver, quorum.cluster_id), quorum_pb2, "Quorum")
        authorizer = RequestAuthorizer(active.image, self.config.authorizer_config)
        server.add_servicer(
            controller_servicer.on_controller(active, authorizer), controller_pb2, "Controller"
        )
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(server.serve)
            self.listener_ports[self.config.controller_listener_name] = bound
            task_status.started(bound)

    async def _run_broker(
        self,
        cluster_id: str,
        quorum: MetadataQuorum,
        channel: ControllerChannel,
        storage: BrokerStorage,
        *,
        task_status=trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The Broker and (forwarding) Controller services and the periodic log jobs;
        `started(port)` once listening. Partitions come from the metadata image."""
        config, clock_ms = self.config, self.clock_ms
        log_manager, epoch, replicas, metadata = (
            storage.log_manager,
            storage.epoch,
            storage.replicas,
            storage.metadata,
        )
        groups = GroupCoordinators(
            replicas,
            metadata,
            channel,
            config.group_config,
            clock_ms=clock_ms,
            segment_bytes=config.offsets_topic_segment_bytes,
            commit_timeout_ms=config.offsets_commit_timeout_ms,
        )
        if self.metrics is not None:
            self.metrics.add(GroupCollector(groups))
        broker_channels = BrokerChannels(
            self._broker_address(metadata),
            node_channel_opener(config, self._inter_broker_listener()),
        )
        transactions = TransactionCoordinators(
            replicas,
            metadata,
            channel,
            config.transaction_config,
            broker_channels.send,
            clock_ms=clock_ms,
        )
        # Each broker's authorizer follows its own metadata image, ACLs included.
        authorizer = RequestAuthorizer(lambda: metadata.image, config.authorizer_config)
        transaction_servicer = TransactionServicer(
            transactions,
            lambda group_id: partition_for(group_id, groups.num_partitions()),
            authorizer,
        )
        verifier = TxnVerifier(
            transaction_servicer.handler.verify_locally,
            transactions.coordinator_id,
            broker_channels,
        )
        broker = BrokerServicer(
            replicas,
            metadata,
            channel,
            cluster_id=cluster_id,
            producer_ids=ProducerIdBlocks(channel, config.node_id, epoch),
            auto_create=config.auto_create_topics_enable,
            controller_id=lambda: quorum.leader_id,
            clock_ms=clock_ms,
            authorizer=authorizer,
            transactions=transaction_servicer,
            txn_markers=TxnMarkerWriter(
                replicas, authorizer, groups.on_txn_marker, clock_ms=clock_ms
            ),
            verifier=verifier,
        )
        groups_servicer = GroupServicer(
            groups, replicas, config.node_id, authorizer, transactions, verifier=verifier
        )
        controller_on_broker = controller_servicer.on_broker(channel, metadata, authorizer)
        services = [
            (
                broker,
                broker_pb2,
                "Broker",
                {"Fetch": broker.fetch_serialized, "Produce": broker.produce_serialized},
            ),
            (groups_servicer, group_pb2, "Group"),
            (transaction_servicer, transaction_pb2, "Transaction"),
            (controller_on_broker, controller_pb2, "Controller"),
            (
                BrokerDescribeQuorum(quorum, authorizer, channel.open_channel),
                quorum_pb2,
                "Quorum",
                (),
                ("DescribeQuorum",),
            ),
        ]
        try:
            async with trio.open_nursery() as nursery:
                endpoints = await serve_broker_listeners(
                    nursery,
                    config,
                    services,
                    self.sessions,
                    lambda user, mechanism: metadata.image.scram_credential(user, mechanism),
                    metrics=self.metrics,
                    bound_ports=self.listener_ports,
                )
                _, host, port = endpoints[0]
                endpoints += await self._serve_kafka_listeners(
                    nursery,
                    broker,
                    groups_servicer,
                    metadata,
                    controller_on_broker.handler,
                    transaction_servicer.handler,
                )
                lifecycle = BrokerLifecycle(
                    config.node_id,
                    host,
                    port,
                    config.rack,
                    channel,
                    metadata,
                    epoch,
                    config.broker_heartbeat_interval_ms,
                    tuple(f"{n}://{h}:{p}" for n, h, p in endpoints),
                )
                nursery.start_soon(
                    _every, config.retention_check_interval_ms, log_manager.cleanup, clock_ms
                )
                nursery.start_soon(
                    _flush_every, config.flush_scheduler_interval_ms, log_manager, clock_ms
                )
                nursery.start_soon(_clean_every, config.cleaner_backoff_ms, log_manager, clock_ms)
                nursery.start_soon(_checkpoint_every, config.checkpoint_interval_ms, log_manager)
                nursery.start_soon(
                    _snapshot_producers_every, config.checkpoint_interval_ms, replicas
                )
                nursery.start_soon(
                    _every,
                    config.producer_id_expiration_check_interval_ms,
                    lambda now: replicas.remove_expired_producers(
                        now, config.producer_id_expiration_ms
                    ),
                    clock_ms,
                )
                self._start_replication(
                    nursery, replicas, metadata, channel, epoch, lifecycle.report_unreachable
                )
                nursery.start_soon(groups.run)
                nursery.start_soon(transactions.run)
                task_status.started((port, lifecycle))
                await trio.sleep_forever()
        finally:
            broker_channels.close()
            replicas.checkpoint_producer_states()  # no more appends: a restart loads this

    async def _serve_kafka_listeners(
        self,
        nursery,
        broker: BrokerServicer,
        groups: GroupServicer,
        metadata: BrokerMetadata,
        admin,
        transactions,
    ) -> list[tuple[str, str, int]]:
        """Kafka wire listeners (kafka.listener.names) over the same handlers as the gRPC
        servicers; [(name, advertised host, port)] for the broker's registration."""
        config = self.config
        endpoints = []
        for name, (host, port) in config.kafka_listeners.items():
            check_protocol(name, config.security.protocol(name) if config.security else "PLAINTEXT")
            dispatcher = Dispatcher(
                Backend(
                    broker.handlers, groups.handler, lambda: metadata.image, admin, transactions
                )
            )
            port = await nursery.start(
                functools.partial(
                    serve_kafka_listener,
                    name,
                    host,
                    port,
                    dispatcher,
                    max_request_bytes=config.socket_request_max_bytes,
                )
            )
            advertised = config.security.advertised.get(name) if config.security else None
            endpoints.append(
                (name, *(advertised if advertised and advertised[1] else (host, port)))
            )
            self.kafka_address = f"{endpoints[-1][1]}:{endpoints[-1][2]}"
        return endpoints

    def _inter_broker_listener(self) -> str:
        security = self.config.security
        return (
            security.inter_broker_listener if security else None
        ) or self.config.broker_listener_name

    def _broker_address(self, metadata: BrokerMetadata) -> Callable[[int], str | None]:
        """Where another broker serves this cluster's brokers (its inter-broker listener)."""
        inter_broker = self._inter_broker_listener()

        def address(broker_id: int) -> str | None:
            b = metadata.image.broker(broker_id)
            if b is None:
                return None
            host, port = b.endpoint(inter_broker) or (b.host, b.port)
            return f"{host}:{port}"

        return address

    def _start_replication(
        self,
        nursery,
        replicas: ReplicaManager,
        metadata: BrokerMetadata,
        channel: ControllerChannel,
        broker_epoch: BrokerEpoch,
        report_unreachable: Callable[[int], None],
    ) -> None:
        """Follower fetchers (a leader whose connection fails is reported to the controller),
        ISR proposals to the controller, and the ISR shrink timer."""

        inter_broker = self._inter_broker_listener()
        nursery.start_soon(
            ReplicaFetchers(
                replicas,
                self._broker_address(metadata),
                broker_epoch,
                monotonic_ms,
                node_channel_opener(self.config, inter_broker),
                report_unreachable,
            ).run
        )
        nursery.start_soon(IsrUpdates(replicas, channel, broker_epoch, monotonic_ms).run)
        nursery.start_soon(_every, ISR_CHECK_MS, lambda _now: replicas.tick(), monotonic_ms)


async def run_until_signalled(
    config: ServerConfig,
    announce: Callable[[str], None] = print,
    on_ready: Callable[[NodeReady], None] = lambda ready: None,
) -> None:
    """Run the node until SIGTERM or SIGINT (Ctrl-C), then stop it cleanly."""
    pin_mmap_threshold()  # a node is a long-lived process serving clients' large requests
    share_one_arena()  # before the node's threads start, so that none has its own arena
    node = Node(config, announce=announce, on_ready=on_ready)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for signum in signals:
                    announce(f"received {signal.Signals(signum).name}, stopping")
                    await node.controlled_shutdown()
                    nursery.cancel_scope.cancel()
                    return

            # Listening before the node is up: a broker waiting for its controllers still stops.
            nursery.start_soon(stop_on_signal)
            nursery.start_soon(release_free_heap_periodically)
            await nursery.start(node.run)
