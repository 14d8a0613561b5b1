"""The transaction coordinators of one broker: a TransactionDriver for each `__transaction_state`
partition it leads (a new leader epoch loads afresh, and is the coordinator epoch), which driver
a transactional id goes to, and FindCoordinator's answer (creating `__transaction_state` on first
use as Kafka does)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.coordinator.runtime import LedPartitions, create_internal_topic, live_leader
from broker.edge.controller_channel import ControllerChannel
from broker.metadata.publisher import BrokerMetadata
from broker.replication.replica_manager import ReplicaManager
from broker.transaction.driver import TransactionDriver
from broker.transaction.markers import TOPIC_GONE, MarkerWriter, Send
from broker.transaction.messages import TransactionConfig
from broker.transaction.records import TRANSACTION_STATE_TOPIC, transaction_partition_for
from clients.errors import ErrorCode, KraftError
from clients.types import TopicPartition
from kraft.controller.messages import CreatableTopic
from kraft.metadata.image import BrokerRegistration

log = logging.getLogger(__name__)

TOPIC = TRANSACTION_STATE_TOPIC


class TransactionCoordinators:
    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: BrokerMetadata,
        channel: ControllerChannel,
        config: TransactionConfig,
        send_markers: Send,
        *,
        clock_ms: Callable[[], int],
        commit_timeout_ms: int = 5_000,
    ) -> None:
        """`send_markers(node_id, WriteTxnMarkersRequest)` reaches partition leaders (a
        BrokerChannels' send in a node)."""
        self.replicas = replicas
        self.metadata = metadata
        self.channel = channel
        self.config = config
        self.markers = MarkerWriter(self.leader_of, send_markers)
        self.led = LedPartitions(
            replicas,
            TOPIC,
            lambda partition, epoch: TransactionDriver(
                replicas,
                partition,
                epoch,
                config,
                self.markers,
                clock_ms=clock_ms,
                commit_timeout_ms=commit_timeout_ms,
            ),
        )

    def leader_of(self, tp: TopicPartition) -> int | None:
        """A partition's leader from this broker's image; TOPIC_GONE once its topic is deleted."""
        topic = self.metadata.image.topic(tp.topic)
        if topic is None:
            return TOPIC_GONE
        reg = topic.partitions.get(tp.partition)
        return reg.leader if reg is not None and reg.has_leader else None

    def partition_exists(self, tp: TopicPartition) -> bool:
        topic = self.metadata.image.topic(tp.topic)
        return topic is not None and tp.partition in topic.partitions

    def num_partitions(self) -> int:
        """As created: an id's partition must not move when the config does."""
        topic = self.metadata.image.topic(TOPIC)
        return len(topic.partitions) if topic is not None else self.config.state_log_num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return transaction_partition_for(transactional_id, self.num_partitions())

    def driver_for(self, transactional_id: str) -> TransactionDriver | None:
        """The driver coordinating the id here, or None: answer NOT_COORDINATOR."""
        return self.led.get(self.partition_for(transactional_id))

    def drivers(self) -> list[TransactionDriver]:
        return [d for d, _ in self.led.drivers.values()]

    async def run(self) -> None:
        await self.led.run()

    # -- FindCoordinator ------------------------------------------------------------------------
    async def find_coordinator(self, transactional_id: str) -> BrokerRegistration:
        """The live broker leading the id's partition; KraftError (COORDINATOR_NOT_AVAILABLE)
        while there is none."""
        if not transactional_id:
            raise KraftError(ErrorCode.INVALID_REQUEST, "the transactional id is empty")
        if self.metadata.image.topic(TOPIC) is None:
            await self._create_state_topic()
        partition = self.partition_for(transactional_id)
        leader = live_leader(self.metadata.image, TOPIC, partition)
        if leader is None:
            raise KraftError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"{TOPIC}-{partition}, which holds transactional id "
                f"'{transactional_id}', has no live leader right now; retry",
            )
        return leader

    def coordinator_id(self, transactional_id: str) -> int | None:
        """The live broker leading the id's partition, or None (no topic yet, no live leader):
        for a partition leader verifying a transaction's batch (KIP-890), which must not create
        the topic as FindCoordinator does."""
        reg = live_leader(self.metadata.image, TOPIC, self.partition_for(transactional_id))
        return reg.broker_id if reg is not None else None

    async def _create_state_topic(self) -> None:
        """Kafka creates the topic on the first FindCoordinator: compacted, with
        transaction.state.log.replication.factor replicas (or as many as are live if fewer) and
        transaction.state.log.min.isr (capped the same way, so a small cluster can write)."""
        live = max(len(self.metadata.image.live_brokers()), 1)
        replication = min(self.config.state_log_replication_factor, live)
        if replication < self.config.state_log_replication_factor:
            log.warning(
                "creating %s with replication factor %d: only %d brokers are live, "
                "transaction.state.log.replication.factor is %d",
                TOPIC,
                replication,
                live,
                self.config.state_log_replication_factor,
            )
        min_isr = min(self.config.state_log_min_isr, replication)
        await create_internal_topic(
            self.channel,
            self.metadata,
            CreatableTopic(
                TOPIC,
                self.config.state_log_num_partitions,
                replication,
                {
                    "cleanup.policy": "compact",
                    "min.insync.replicas": str(min_isr),
                    "segment.bytes": str(self.config.state_log_segment_bytes),
                },
            ),
        )
