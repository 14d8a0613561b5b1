"""Runs one GroupCoordinator (broker/group) while this broker leads its `__consumer_offsets`
partition at one leader epoch: waits until everything in the partition is committed, replays it,
then carries out the core's effects (answers to parked requests; appends with acks=all whose
results go back in append order) and ticks it on its deadlines (broker/coordinator/
runtime.py does all that for any coordinator). It all runs on the trio thread, so the core
is never entered by two requests at once."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

import trio

from broker.coordinator.runtime import LedPartitionDriver
from broker.group.messages import GroupConfig
from broker.group.partition_coordinator import GroupCoordinator
from broker.group.records import OFFSETS_TOPIC, OffsetsRecordError
from broker.replication.replica_manager import ReplicaManager
from clients.record.batch_header import CorruptBatchError
from clients.record.codec import decode_batch, encode_batch
from clients.record.control import decode_marker

log = logging.getLogger(__name__)


class CoordinatorDriver(LedPartitionDriver):
    topic = OFFSETS_TOPIC
    what = "group records"
    record_errors = (OffsetsRecordError,)

    def __init__(
        self,
        replicas: ReplicaManager,
        partition: int,
        leader_epoch: int,
        config: GroupConfig,
        *,
        clock_ms: Callable[[], int],
        commit_timeout_ms: int = 5_000,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(
            replicas,
            partition,
            leader_epoch,
            GroupCoordinator(partition, config, rng or random.Random()),
            clock_ms=clock_ms,
            commit_timeout_ms=commit_timeout_ms,
        )
        # Transaction markers the broker reported while the log was still being loaded:
        # applied after the load (those the load itself replayed then find nothing pending).
        self._early_markers: list[tuple[int, bool, int]] | None = []

    async def run(self) -> None:
        """Load, coordinate until cancelled (leadership moved), then resign: every parked request
        is answered NOT_COORDINATOR and the client looks the coordinator up again."""
        try:
            loaded = await self._load()
            self.core.become_coordinator(self.clock_ms())
            early, self._early_markers = self._early_markers, None
            for producer_id, committed, offset in early or ():
                if offset >= self.core.loaded_offset:  # else the load replayed it
                    self.core.replay_txn_marker(producer_id, committed, offset)
            log.debug(
                "coordinating the groups of %s-%d (leader epoch %d): replayed %d records",
                OFFSETS_TOPIC,
                self.partition,
                self.leader_epoch,
                loaded,
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._tick_loop)
                nursery.start_soon(self._commit_loop)
        finally:
            self._stopped()

    def _encode(self, effect, now: int) -> bytes:
        records = [(key, value, (), now) for key, value in effect.records]
        if effect.producer_id < 0:
            return encode_batch(records)
        # TxnOffsetCommit: a transactional batch of the producer, sequence 0 as Kafka's
        # coordinator writes it (the leader checks only its epoch).
        return encode_batch(
            records,
            producer_id=effect.producer_id,
            producer_epoch=effect.producer_epoch,
            base_sequence=0,
            is_transactional=True,
        )

    def _replay_batch(self, data, pos: int, header) -> int:
        """A control batch ends a transaction, a transactional one holds offsets pending until
        then, any other is plain group records."""
        records = decode_batch(data, pos)[1]
        if not header.is_control:
            return self._replay_records(
                records, header.producer_id if header.is_transactional else -1
            )
        for record in records:
            try:
                marker = decode_marker(record.key, record.value)
            except CorruptBatchError as exc:
                log.warning(
                    "%s-%d offset %d: control record skipped: %s",
                    OFFSETS_TOPIC,
                    self.partition,
                    record.offset,
                    exc,
                )
                continue
            self.core.replay_txn_marker(header.producer_id, marker.committed, record.offset)
        return len(records)

    def on_txn_marker(self, producer_id: int, committed: bool, offset: int) -> None:
        """WriteTxnMarkers committed an end marker at `offset` in this partition."""
        if self._early_markers is not None:
            self._early_markers.append((producer_id, committed, offset))
            return
        self.core.replay_txn_marker(producer_id, committed, offset)
