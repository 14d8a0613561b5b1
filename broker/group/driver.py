"""Runs one GroupCoordinator (broker/group) while this broker leads its `__consumer_offsets`
partition at one leader epoch: waits until everything in the partition is committed, replays it,
then carries out the core's effects (answers to parked requests; appends with acks=all whose
results go back in append order) and ticks it on its deadlines. It all runs on the trio thread,
so the core is never entered by two requests at once."""
from __future__ import annotations

import collections
import logging
import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Hashable

import trio

from broker.group.coordinator import GroupCoordinator
from broker.group.messages import AppendRecords, Effect, GroupConfig, Respond
from broker.group.records import OFFSETS_TOPIC, OffsetsRecordError
from broker.replication.replica_manager import ACKS_ALL, ProduceResult, ReplicaManager
from clients.errors import ErrorCode
from clients.grpc_server import RateLimitedLog
from clients.record.batch_header import CorruptBatchError
from clients.record.codec import decode_batch, encode_batch, iter_batches
from clients.record.control import decode_marker

log = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 1 << 20
TICK_FLOOR_MS = 100


@dataclass
class _Slot:
    """Where a parked request's answer lands; `fallback` if the driver stops first."""
    done: trio.Event
    fallback: Any
    answer: Any = None


class CoordinatorDriver:
    def __init__(self, replicas: ReplicaManager, partition: int, leader_epoch: int,
                 config: GroupConfig, *, clock_ms: Callable[[], int],
                 commit_timeout_ms: int = 5_000, rng: random.Random | None = None) -> None:
        self.replicas = replicas
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.clock_ms = clock_ms
        self.commit_timeout_s = commit_timeout_ms / 1000
        self.core = GroupCoordinator(partition, config, rng or random.Random())
        self._slots: dict[Hashable, _Slot] = {}
        self._handles = 0
        # Appended, not yet answered: (append id, what the append said, when to give up).
        self._inflight: collections.deque[tuple[int, ProduceResult, float]] = collections.deque()
        # Replication moved, a request came in or an append went out: waiters look again.
        self._changed = trio.lowlevel.ParkingLot()
        self.failed_appends = RateLimitedLog()
        # Transaction markers the broker reported while the log was still being loaded:
        # applied after the load (those the load itself replayed then find nothing pending).
        self._early_markers: list[tuple[int, bool, int]] | None = []

    def poke(self) -> None:
        self._changed.unpark_all()

    # -- requests ---------------------------------------------------------------------------------
    async def ask(self, call: Callable[[Hashable, int], tuple[Effect, ...]], fallback: Any,
                  timeout_s: float = math.inf) -> Any:
        """`call(handle, now_ms)` hands a request to the core; its answer for `handle` may come
        from that call or a later one. After `timeout_s` (or when the driver stops) the caller
        gets `fallback`; a late answer is dropped, as a response the client never read."""
        self._handles += 1
        handle = self._handles
        slot = self._slots[handle] = _Slot(trio.Event(), fallback)
        try:
            self._run(call(handle, self.clock_ms()))
            with trio.move_on_after(timeout_s):
                await slot.done.wait()
        finally:
            self._slots.pop(handle, None)
        return slot.answer if slot.done.is_set() else fallback

    def now(self) -> int:
        return self.clock_ms()

    def _run(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                slot = self._slots.pop(effect.handle, None)
                if slot is not None:
                    slot.answer = effect.response
                    slot.done.set()
            else:
                self._append(effect)
        self.poke()     # deadlines may have moved; appends may wait

    def _append(self, effect: AppendRecords) -> None:
        now = self.clock_ms()
        records = [(key, value, (), now) for key, value in effect.records]
        if effect.producer_id >= 0:
            # TxnOffsetCommit: a transactional batch of the producer, sequence 0 as Kafka's
            # coordinator writes it (the leader checks only its epoch).
            batch = encode_batch(records, producer_id=effect.producer_id,
                                 producer_epoch=effect.producer_epoch, base_sequence=0,
                                 is_transactional=True)
        else:
            batch = encode_batch(records)
        # The replica manager wakes the followers' parked fetches: they take it at once.
        result = self.replicas.append(OFFSETS_TOPIC, self.partition, batch, ACKS_ALL, now,
                                      coordinator=True)
        self._inflight.append((effect.append_id, result, trio.current_time() + self.commit_timeout_s))

    # -- life ---------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Load, coordinate until cancelled (leadership moved), then resign: every parked request
        is answered NOT_COORDINATOR and the client looks the coordinator up again."""
        try:
            loaded = await self._load()
            self.core.become_coordinator(self.clock_ms())
            early, self._early_markers = self._early_markers, None
            for producer_id, committed, offset in early or ():
                if offset >= self.core.loaded_offset:      # else the load replayed it
                    self.core.replay_txn_marker(producer_id, committed, offset)
            log.debug("coordinating the groups of %s-%d (leader epoch %d): replayed %d records",
                     OFFSETS_TOPIC, self.partition, self.leader_epoch, loaded)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._tick_loop)
                nursery.start_soon(self._commit_loop)
        finally:
            self._run(self.core.resign())
            for slot in self._slots.values():
                slot.answer = slot.fallback
                slot.done.set()
            self._slots.clear()

    async def _load(self) -> int:
        """Replay the whole partition. First wait until its high watermark reaches the log end:
        a new leader's tail may not be committed yet, and a coordinator must never answer from
        records a failover could still take back."""
        while True:
            hosted = self.replicas.get(OFFSETS_TOPIC, self.partition)
            if hosted is None or not hosted.is_leader or hosted.leader_epoch != self.leader_epoch:
                await trio.sleep_forever()      # the manager cancels this driver
            log_ = hosted.log
            if log_.high_watermark >= log_.log_end_offset:
                break
            await self._changed.park()
        offset, end, replayed = log_.log_start_offset, log_.log_end_offset, 0
        while offset < end:
            offset = max(offset, log_.log_start_offset)     # retention may have moved the start
            data = log_.read(offset, LOAD_CHUNK_BYTES, max_offset=end).records
            if not data:
                break
            for pos, header in iter_batches(data):
                replayed += self._replay_batch(data, pos, header)
                offset = header.next_offset
            await trio.sleep(0)     # a big partition must not stall every other request
        return replayed

    def _replay_batch(self, data, pos: int, header) -> int:
        """Replay one batch of the log: a control batch ends a transaction, a transactional
        one holds offsets pending until then, any other is plain group records."""
        records = decode_batch(data, pos)[1]
        if header.is_control:
            for record in records:
                try:
                    marker = decode_marker(record.key, record.value)
                except CorruptBatchError as exc:
                    log.warning("%s-%d offset %d: control record skipped: %s", OFFSETS_TOPIC,
                                self.partition, record.offset, exc)
                    continue
                self.core.replay_txn_marker(header.producer_id, marker.committed, record.offset)
            return len(records)
        producer_id = header.producer_id if header.is_transactional else -1
        return sum(self._replay(r.key, r.value, r.offset, producer_id) for r in records)

    def on_txn_marker(self, producer_id: int, committed: bool, offset: int) -> None:
        """WriteTxnMarkers committed an end marker at `offset` in this partition."""
        if self._early_markers is not None:
            self._early_markers.append((producer_id, committed, offset))
            return
        self.core.replay_txn_marker(producer_id, committed, offset)

    def _replay(self, key: bytes | None, value: bytes | None, offset: int,
                producer_id: int = -1) -> int:
        try:
            self.core.replay(key or b"", value, offset, producer_id)
            return 1
        except OffsetsRecordError as exc:
            # Not ours (e.g. written by a newer kraft): skip it rather than coordinate nothing.
            log.warning("%s-%d offset %d skipped: %s", OFFSETS_TOPIC, self.partition, offset, exc)
            return 0

    async def _tick_loop(self) -> None:
        while True:
            deadline, now = self.core.next_deadline_ms(), self.clock_ms()
            if deadline is not None and deadline <= now:
                self._run(self.core.tick(now))
                deadline = self.core.next_deadline_ms()
                if deadline is not None and deadline <= now:
                    # A deadline the tick left in the past would spin this loop and starve the
                    # broker: the core should never leave one, but look again later regardless.
                    log.error("%s-%d: the group coordinator left deadline %d in the past",
                              OFFSETS_TOPIC, self.partition, deadline)
                    deadline = now + TICK_FLOOR_MS
            wait_s = math.inf if deadline is None else (deadline - now) / 1000
            with trio.move_on_after(wait_s):
                await self._changed.park()

    async def _commit_loop(self) -> None:
        """Answer appends in order, each once the high watermark passed it (every in-sync replica
        has it), failed, or not committed within offsets.commit.timeout.ms."""
        while True:
            if not self._inflight:
                await self._changed.park()
                continue
            append_id, result, give_up = self._inflight[0]
            if result.error_code:
                error = ErrorCode(result.error_code)
                # The client hears only Kafka's code (a group record too large answers
                # UNKNOWN_SERVER_ERROR): the reason goes to the log, one line per kind.
                self.failed_appends.warning(
                    error.name, "%s-%d: group records not appended (%s): %s", OFFSETS_TOPIC,
                    self.partition, error.name, result.error_message)
            else:
                error = await self.replicas.wait_committed(OFFSETS_TOPIC, self.partition,
                                                           result.last_offset, result.leader_epoch,
                                                           give_up)
                if error is None:
                    error = ErrorCode.REQUEST_TIMED_OUT
            self._inflight.popleft()
            self._run(self.core.on_append_result(append_id, error, self.clock_ms(),
                                                 result.base_offset))
