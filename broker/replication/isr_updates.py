"""Partition leaders' ISR proposals to the active controller: AlterPartition with the leader and
partition epochs they know and each new member's broker epoch; each answer goes back to the
partition's PartitionState with the proposal it answers."""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.edge.controller_channel import ControllerChannel
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import AlterPartitionRequest, PartitionIsrChange

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0


class IsrUpdates:
    def __init__(
        self,
        replicas: ReplicaManager,
        channel: ControllerChannel,
        broker_epoch: Callable[[], int],
        clock_ms: Callable[[], int],
    ) -> None:
        self.replicas = replicas
        self.channel = channel
        self.broker_epoch = broker_epoch
        self.clock_ms = clock_ms

    async def run(self) -> None:
        """Send what leaders propose, batched per round; runs until cancelled."""
        while True:
            await self.replicas.wait_isr_proposals()
            proposals = self.replicas.take_isr_proposals()
            if proposals:
                await self._send(proposals)

    async def _send(self, proposals) -> None:
        changes = tuple(
            PartitionIsrChange(
                p.topic_id,
                p.partition,
                prop.leader_epoch,
                prop.partition_epoch,
                prop.new_isr,
                prop.broker_epochs,
            )
            for p, prop in proposals
        )
        request = AlterPartitionRequest(self.replicas.node_id, self.broker_epoch(), changes)
        try:
            response = await self.channel.send(request, REQUEST_TIMEOUT_S)
        except KraftError as exc:
            # Unanswered: each PartitionState resends after its own timeout.
            log.info("AlterPartition for %d partitions not answered: %s", len(changes), exc.message)
            return
        now = self.clock_ms()
        if response.error_code:
            log.info("AlterPartition refused: %s", response.error_message)
            for partition, proposal in proposals:
                self.replicas.on_alter_partition_result(
                    partition, proposal, ErrorCode(response.error_code), -1, -1, (), now
                )
            return
        results = {(r.topic_id, r.partition): r for r in response.partitions}
        for partition, proposal in proposals:
            result = results.get((partition.topic_id, partition.partition))
            if result is None:
                continue
            if result.error_code:
                log.info(
                    "ISR change of %s-%d refused: %s",
                    partition.topic,
                    partition.partition,
                    result.error_message,
                )
            self.replicas.on_alter_partition_result(
                partition,
                proposal,
                ErrorCode(result.error_code),
                result.leader_epoch,
                result.partition_epoch,
                tuple(result.isr),
                now,
            )
