"""A node's wiring, the part of Node (a mixin) that starts what serves beside the broker's
services: the metrics endpoint, the controller listener, Kafka's listeners and replication."""

from __future__ import annotations

import functools
from collections.abc import Callable

import trio

from broker.controller.active import ActiveController
from broker.edge.controller_channel import ControllerChannel
from broker.kafka.backend import Backend
from broker.kafka.handlers import Dispatcher
from broker.kafka.listener import check_protocol, serve_kafka_listener
from broker.metadata.publisher import BrokerMetadata
from broker.metadata.quorum import MetadataQuorum
from broker.metadata.servicer import QuorumServicer
from broker.metrics.collectors import (
    ConnectionCollector,
    ControllerCollector,
    QuorumCollector,
    ReplicaCollector,
)
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.isr_updates import IsrUpdates
from broker.replication.replica_manager import ReplicaManager, monotonic_ms
from broker.security.request_authorizer import RequestAuthorizer
from broker.server.lifecycle import BrokerEpoch
from broker.server.listeners import listener_server, node_channel_opener
from broker.server.log_jobs import run_every
from broker.server.node_seats import BrokerStorage
from broker.services import controller_servicer
from broker.services.broker_servicer import BrokerServicer
from broker.services.group_servicer import GroupServicer
from clients.wire import controller_pb2, quorum_pb2

# How often leaders look for followers that fell out of sync (replica.lag.time.max.ms is 30 s).
ISR_CHECK_MS = 250


class NodeWiring:
    """Node's listeners and replication; the attributes are Node's (node.py)."""

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
        nursery.start_soon(run_every, ISR_CHECK_MS, lambda _now: replicas.tick(), monotonic_ms)
