"""One node process: the metadata quorum seat (voter or observer), the active controller when it
is a controller, the broker (partitions, Broker and Controller services, periodic log jobs, and
its registration) when it is a broker. Stops cleanly on SIGTERM/SIGINT: the broker first asks to
be fenced so leadership moves away, then checkpoints and leaves the clean-shutdown marker.
What it opens first is in node_seats.py, its listeners and replication in node_wiring.py (a
mixin of Node), the periodic log jobs in log_jobs.py."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

import trio

from broker.coordinator.placement import partition_for
from broker.edge.controller_channel import ControllerChannel
from broker.group.coordinator_registry import GroupCoordinators
from broker.handlers.write_txn_markers import TxnMarkerWriter
from broker.idempotence.producer_ids import ProducerIdBlocks
from broker.metadata.describe_quorum import BrokerDescribeQuorum
from broker.metadata.quorum import MetadataQuorum
from broker.metrics.collectors import (
    GroupCollector,
)
from broker.metrics.endpoint import NodeMetrics
from broker.security.request_authorizer import RequestAuthorizer
from broker.security.sessions import SessionTable
from broker.server.config import ServerConfig
from broker.server.heap import pin_mmap_threshold, release_free_heap_periodically, share_one_arena
from broker.server.lifecycle import BrokerLifecycle
from broker.server.listeners import node_channel_opener, serve_broker_listeners
from broker.server.log_jobs import (
    checkpoint_every,
    clean_every,
    flush_every,
    run_every,
    snapshot_producers_every,
)
from broker.server.node_ready import NodeReady
from broker.server.node_seats import (  # noqa: F401  (callers import these from node.py)
    BrokerStorage,
    NodeStartError,
    check_formatted,
    controller_config,
    metadata_dir,
    open_broker_storage,
    open_quorum,
    quorum_config,
    raft_config,
)
from broker.server.node_wiring import NodeWiring
from broker.services import controller_servicer
from broker.services.broker_servicer import BrokerServicer, wall_clock_ms
from broker.services.group_servicer import GroupServicer
from broker.services.transaction_servicer import TransactionServicer
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.markers import BrokerChannels
from broker.transaction.verification import TxnVerifier
from clients.wire import broker_pb2, controller_pb2, group_pb2, quorum_pb2, transaction_pb2
from kraft.log.dir_lock import DirLocked, lock_dirs, release_all
from kraft.log.fd_limit import raise_fd_limit

log = logging.getLogger(__name__)

# A broker not serving after this long says what it waits for (controllers down or unreachable).
WAITING_NOTICE_S = 3.0


class Node(NodeWiring):
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

    async def controlled_shutdown(self) -> None:
        if self.lifecycle is not None:
            await self.lifecycle.controlled_shutdown()

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
                    run_every, config.retention_check_interval_ms, log_manager.cleanup, clock_ms
                )
                nursery.start_soon(
                    flush_every, config.flush_scheduler_interval_ms, log_manager, clock_ms
                )
                nursery.start_soon(clean_every, config.cleaner_backoff_ms, log_manager, clock_ms)
                nursery.start_soon(checkpoint_every, config.checkpoint_interval_ms, log_manager)
                nursery.start_soon(
                    snapshot_producers_every, config.checkpoint_interval_ms, replicas
                )
                nursery.start_soon(
                    run_every,
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
