"""The group coordinators of one broker: a CoordinatorDriver for each `__consumer_offsets`
partition it leads (started when it becomes leader, stopped when it stops being leader or the
leader epoch changes, so a new epoch always loads afresh), which driver a group goes to, and
FindCoordinator's answer, creating `__consumer_offsets` on first use as Kafka does."""
from __future__ import annotations

import logging
import random
from typing import Callable

import trio

from broker.metadata.publisher import BrokerMetadata
from broker.controller.channel import ControllerChannel
from broker.group.driver import CoordinatorDriver
from broker.group.messages import GroupConfig
from broker.group.records import OFFSETS_TOPIC, partition_for
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest
from kraft.metadata.image import BrokerRegistration

log = logging.getLogger(__name__)

CREATE_TIMEOUT_S = 10.0
RESTART_BACKOFF_S = 1.0


class GroupCoordinators:
    def __init__(self, replicas: ReplicaManager, metadata: BrokerMetadata,
                 channel: ControllerChannel, config: GroupConfig, *,
                 clock_ms: Callable[[], int], segment_bytes: int = 104_857_600,
                 commit_timeout_ms: int = 5_000) -> None:
        self.replicas = replicas
        self.metadata = metadata
        self.channel = channel
        self.config = config
        self.clock_ms = clock_ms
        self.segment_bytes = segment_bytes
        self.commit_timeout_ms = commit_timeout_ms
        self._drivers: dict[int, tuple[CoordinatorDriver, trio.CancelScope]] = {}
        self._changed = trio.Event()
        self._rng = random.Random()     # member ids: from the OS's entropy, never a fixed seed
        replicas.purgatory.watch(OFFSETS_TOPIC, self._offsets_partition_moved)

    # -- which driver ---------------------------------------------------------------------------
    def num_partitions(self) -> int:
        """The offsets topic's partition count as created (the config only says what to create
        it with): a group's partition must not move when the config does."""
        topic = self.metadata.image.topic(OFFSETS_TOPIC)
        return len(topic.partitions) if topic is not None else self.config.offsets_topic_num_partitions

    def driver_for(self, group_id: str) -> CoordinatorDriver | None:
        """The driver coordinating `group_id` here, or None: answer NOT_COORDINATOR."""
        entry = self._drivers.get(partition_for(group_id, self.num_partitions()))
        return entry[0] if entry is not None else None

    def drivers(self) -> list[CoordinatorDriver]:
        return [d for d, _ in self._drivers.values()]

    # -- following leadership -------------------------------------------------------------------
    def _offsets_partition_moved(self, partition: int) -> None:
        """Leadership, the log end, the high watermark or the ISR of an offsets partition moved:
        look at leadership again, and wake that partition's driver (it may be loading)."""
        self._changed.set()
        entry = self._drivers.get(partition)
        if entry is not None:
            entry[0].poke()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                self._reconcile(nursery)
                await self._changed.wait()
                self._changed = trio.Event()

    def _reconcile(self, nursery: trio.Nursery) -> None:
        led = {p.partition: p.leader_epoch for p in self.replicas.partitions()
               if p.topic == OFFSETS_TOPIC and p.is_leader}
        for partition, (driver, scope) in list(self._drivers.items()):
            if led.get(partition) != driver.leader_epoch:
                scope.cancel()          # its run() resigns: parked requests hear NOT_COORDINATOR
                del self._drivers[partition]
        for partition, epoch in led.items():
            if partition not in self._drivers:
                driver = CoordinatorDriver(self.replicas, partition, epoch, self.config,
                                           clock_ms=self.clock_ms,
                                           commit_timeout_ms=self.commit_timeout_ms, rng=self._rng)
                scope = trio.CancelScope()
                self._drivers[partition] = (driver, scope)
                nursery.start_soon(self._run_driver, scope, driver)

    async def _run_driver(self, scope: trio.CancelScope, driver: CoordinatorDriver) -> None:
        with scope:
            try:
                await driver.run()
            except Exception:
                # One partition's failure must not take the broker down: its groups hear
                # NOT_COORDINATOR for a moment, then a new driver loads the partition afresh.
                log.exception("the coordinator of %s-%d failed; restarting it in %.0f s",
                              OFFSETS_TOPIC, driver.partition, RESTART_BACKOFF_S)
                await trio.sleep(RESTART_BACKOFF_S)
                if self._drivers.get(driver.partition, (None,))[0] is driver:
                    del self._drivers[driver.partition]
                    self._changed.set()

    # -- FindCoordinator ------------------------------------------------------------------------
    async def find_coordinator(self, group_id: str) -> BrokerRegistration:
        """The live broker leading the group's offsets partition; KraftError
        (COORDINATOR_NOT_AVAILABLE) while there is none."""
        if not group_id:
            raise KraftError(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        if self.metadata.image.topic(OFFSETS_TOPIC) is None:
            await self._create_offsets_topic()
        image = self.metadata.image
        topic = image.topic(OFFSETS_TOPIC)
        partition = partition_for(group_id, len(topic.partitions))
        reg = topic.partitions.get(partition)
        leader = image.broker(reg.leader) if reg is not None and reg.has_leader else None
        if leader is None or leader.fenced:
            raise KraftError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{OFFSETS_TOPIC}-{partition}, which holds group '{group_id}', has "
                             "no live leader right now; retry")
        return leader

    async def _create_offsets_topic(self) -> None:
        """Kafka creates the offsets topic on the first FindCoordinator: compacted, with
        offsets.topic.replication.factor replicas, or as many brokers as are live if fewer."""
        live = len(self.metadata.image.live_brokers())
        replication = min(self.config.offsets_topic_replication_factor, max(live, 1))
        if replication < self.config.offsets_topic_replication_factor:
            # Kafka refuses until enough brokers are up; a one-broker dev cluster would then
            # need a setting to have groups at all. Say so loudly instead: it is for good.
            log.warning("creating %s with replication factor %d: only %d brokers are live, "
                        "offsets.topic.replication.factor is %d", OFFSETS_TOPIC, replication,
                        live, self.config.offsets_topic_replication_factor)
        request = CreateTopicsRequest((CreatableTopic(
            OFFSETS_TOPIC, self.config.offsets_topic_num_partitions, replication,
            {"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)}),),
            internal=True)
        response, _ = await self.channel.send_with_offset(request, CREATE_TIMEOUT_S)
        result = response.topics[0]
        if result.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            raise KraftError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"could not create {OFFSETS_TOPIC}: {result.error_message}")
        if result.error_code == ErrorCode.NONE:
            log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC,
                     self.config.offsets_topic_num_partitions, replication)
        if not await self.metadata.wait_for(lambda image: image.topic(OFFSETS_TOPIC) is not None,
                                            CREATE_TIMEOUT_S):
            raise KraftError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{OFFSETS_TOPIC} was created but this broker has not seen it yet; "
                             "retry")


    def on_txn_marker(self, partition: int, producer_id: int, producer_epoch: int,
                      committed: bool, offset: int) -> None:
        """TEMP: txn-client implements it (pending transactional offsets); nothing here."""
