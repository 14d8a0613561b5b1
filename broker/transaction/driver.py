"""Runs one TransactionCoordinator while this broker leads its `__transaction_state` partition at
one leader epoch, which is the coordinator epoch its markers carry: loads the partition, then
carries out the core's effects (appends with acks=all, answers, and markers through the
MarkerWriter, each decided transaction's in a task of its own) and ticks it."""

from __future__ import annotations

import logging

import trio

from broker.coordinator.runtime import LedPartitionDriver
from broker.replication.replica_manager import ReplicaManager
from broker.transaction.markers import MarkerWriter
from broker.transaction.messages import SendMarkers, TransactionConfig
from broker.transaction.partition_coordinator import TransactionCoordinator
from broker.transaction.records import TRANSACTION_STATE_TOPIC, TransactionRecordError

log = logging.getLogger(__name__)


class TransactionDriver(LedPartitionDriver):
    topic = TRANSACTION_STATE_TOPIC
    what = "transaction state records"
    record_errors = (TransactionRecordError,)

    def __init__(
        self,
        replicas: ReplicaManager,
        partition: int,
        leader_epoch: int,
        config: TransactionConfig,
        markers: MarkerWriter,
        **timing,
    ) -> None:
        super().__init__(
            replicas, partition, leader_epoch, TransactionCoordinator(partition, config), **timing
        )
        self.markers = markers
        self._to_send: list[SendMarkers] = []

    def _other_effect(self, effect: SendMarkers) -> None:
        self._to_send.append(effect)

    async def run(self) -> None:
        """Load, coordinate until cancelled (leadership moved), then resign: parked requests
        hear NOT_COORDINATOR; markers in flight stop (the next coordinator sends them again)."""
        try:
            loaded = await self._load()
            effects = self.core.become_coordinator(self.leader_epoch, self.clock_ms())
            log.debug(
                "coordinating the transactions of %s-%d (coordinator epoch %d): replayed "
                "%d records",
                self.topic,
                self.partition,
                self.leader_epoch,
                loaded,
            )
            async with trio.open_nursery() as nursery:
                self._run(effects)
                nursery.start_soon(self._tick_loop)
                nursery.start_soon(self._commit_loop)
                nursery.start_soon(self._marker_loop, nursery)
        finally:
            self._stopped()

    async def _marker_loop(self, nursery: trio.Nursery) -> None:
        while True:
            while self._to_send:
                nursery.start_soon(self._write_markers, self._to_send.pop(0))
            await self._changed.park()

    async def _write_markers(self, markers: SendMarkers) -> None:
        if await self.markers.write(markers):
            self._run(
                self.core.on_markers_written(
                    markers.transactional_id,
                    markers.producer_id,
                    markers.producer_epoch,
                    self.clock_ms(),
                )
            )
