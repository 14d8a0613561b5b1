"""The group coordinators of one broker: a CoordinatorDriver for each `__consumer_offsets`
partition it leads (started when it becomes leader, stopped when it stops being leader or the
leader epoch changes, so a new epoch always loads afresh), which driver a group goes to, and
FindCoordinator's answer, creating `__consumer_offsets` on first use as Kafka does."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from broker.coordinator.placement import partition_for
from broker.coordinator.runtime import LedPartitions, create_internal_topic, live_leader
from broker.edge.controller_channel import ControllerChannel
from broker.group.driver import CoordinatorDriver
from broker.group.messages import GroupConfig
from broker.group.records import OFFSETS_TOPIC
from broker.metadata.publisher import BrokerMetadata
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import CreatableTopic
from kraft.metadata.image import BrokerRegistration

log = logging.getLogger(__name__)


class GroupCoordinators:
    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: BrokerMetadata,
        channel: ControllerChannel,
        config: GroupConfig,
        *,
        clock_ms: Callable[[], int],
        segment_bytes: int = 104_857_600,
        commit_timeout_ms: int = 5_000,
    ) -> None:
        self.replicas = replicas
        self.metadata = metadata
        self.channel = channel
        self.config = config
        self.segment_bytes = segment_bytes
        self._rng = random.Random()  # member ids: from the OS's entropy, never a fixed seed
        self.led = LedPartitions(
            replicas,
            OFFSETS_TOPIC,
            lambda partition, epoch: CoordinatorDriver(
                replicas,
                partition,
                epoch,
                config,
                clock_ms=clock_ms,
                commit_timeout_ms=commit_timeout_ms,
                rng=self._rng,
            ),
        )

    # -- which driver ---------------------------------------------------------------------------
    def num_partitions(self) -> int:
        """The offsets topic's partition count as created (the config only says what to create
        it with): a group's partition must not move when the config does."""
        topic = self.metadata.image.topic(OFFSETS_TOPIC)
        return (
            len(topic.partitions) if topic is not None else self.config.offsets_topic_num_partitions
        )

    def driver_for(self, group_id: str) -> CoordinatorDriver | None:
        """The driver coordinating `group_id` here, or None: answer NOT_COORDINATOR."""
        return self.led.get(partition_for(group_id, self.num_partitions()))

    def drivers(self) -> list[CoordinatorDriver]:
        return [d for d, _ in self.led.drivers.values()]

    def on_txn_marker(
        self, partition: int, producer_id: int, producer_epoch: int, committed: bool, offset: int
    ) -> None:
        """The broker committed (acks=all) a transaction's end marker at `offset` of
        `__consumer_offsets-<partition>`: that producer's pending offsets there are applied
        (COMMIT) or dropped (ABORT). A partition not coordinated here is skipped: whoever loads
        it replays the marker from the log."""
        driver = self.led.get(partition)
        if driver is not None:
            driver.on_txn_marker(producer_id, committed, offset)

    async def run(self) -> None:
        """A driver per led offsets partition, following leadership until cancelled."""
        await self.led.run()

    # -- FindCoordinator ------------------------------------------------------------------------
    async def find_coordinator(self, group_id: str) -> BrokerRegistration:
        """The live broker leading the group's offsets partition; KraftError
        (COORDINATOR_NOT_AVAILABLE) while there is none."""
        if not group_id:
            raise KraftError(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        if self.metadata.image.topic(OFFSETS_TOPIC) is None:
            await self._create_offsets_topic()
        partition = partition_for(group_id, self.num_partitions())
        leader = live_leader(self.metadata.image, OFFSETS_TOPIC, partition)
        if leader is None:
            raise KraftError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"{OFFSETS_TOPIC}-{partition}, which holds group '{group_id}', has "
                "no live leader right now; retry",
            )
        return leader

    async def _create_offsets_topic(self) -> None:
        """Kafka creates the offsets topic on the first FindCoordinator: compacted, with
        offsets.topic.replication.factor replicas, or as many brokers as are live if fewer."""
        live = len(self.metadata.image.live_brokers())
        replication = min(self.config.offsets_topic_replication_factor, max(live, 1))
        if replication < self.config.offsets_topic_replication_factor:
            # Kafka refuses until enough brokers are up; a one-broker dev cluster would then
            # need a setting to have groups at all. Say so loudly instead: it is for good.
            log.warning(
                "creating %s with replication factor %d: only %d brokers are live, "
                "offsets.topic.replication.factor is %d",
                OFFSETS_TOPIC,
                replication,
                live,
                self.config.offsets_topic_replication_factor,
            )
        await create_internal_topic(
            self.channel,
            self.metadata,
            CreatableTopic(
                OFFSETS_TOPIC,
                self.config.offsets_topic_num_partitions,
                replication,
                {"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)},
            ),
        )
