"""Runs one GroupCoordinator (broker/group) while this broker leads its `__consumer_offsets`
partition at one leader epoch: waits until everything in the partition is committed, replays it,
then carries out the core's effects (answers to parked requests; appends with acks=all whose
results go back in append order) and ticks it on its deadlines (broker/replication/
led_partition.py does all that for any coordinator). It all runs on the trio thread, so the core
is never entered by two requests at once."""
from __future__ import annotations

import logging
import random
from typing import Callable

import trio

from broker.group.coordinator import GroupCoordinator
from broker.group.messages import GroupConfig
from broker.group.records import OFFSETS_TOPIC, OffsetsRecordError
from broker.replication.led_partition import LedPartitionDriver
from broker.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)


class CoordinatorDriver(LedPartitionDriver):
    topic = OFFSETS_TOPIC
    what = "group records"
    record_errors = (OffsetsRecordError,)

    def __init__(self, replicas: ReplicaManager, partition: int, leader_epoch: int,
                 config: GroupConfig, *, clock_ms: Callable[[], int],
                 commit_timeout_ms: int = 5_000, rng: random.Random | None = None) -> None:
        super().__init__(replicas, partition, leader_epoch,
                         GroupCoordinator(partition, config, rng or random.Random()),
                         clock_ms=clock_ms, commit_timeout_ms=commit_timeout_ms)

    async def run(self) -> None:
        """Load, coordinate until cancelled (leadership moved), then resign: every parked request
        is answered NOT_COORDINATOR and the client looks the coordinator up again."""
        try:
            loaded = await self._load()
            self.core.become_coordinator(self.clock_ms())
            log.debug("coordinating the groups of %s-%d (leader epoch %d): replayed %d records",
                      OFFSETS_TOPIC, self.partition, self.leader_epoch, loaded)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._tick_loop)
                nursery.start_soon(self._commit_loop)
        finally:
            self._stopped()
