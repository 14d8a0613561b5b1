"""What a coordinator's driver does with the internal-topic partition it leads at one leader
epoch (`__consumer_offsets` for groups, `__transaction_state` for transactions): replay the
partition once all of it is committed, append records with acks=all and hand each result back
in append order, tick the core on its deadlines, and park requests until the core answers them.
`LedPartitions` starts such a driver per led partition and stops it when leadership moves;
`live_leader` and `create_internal_topic` serve FindCoordinator."""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from broker.edge.controller_channel import ControllerChannel
from broker.metadata.publisher import BrokerMetadata
from broker.replication.replica_manager import ACKS_ALL, ProduceResult, ReplicaManager
from clients.errors import ErrorCode, KraftError
from clients.rate_limited_log import RateLimitedLog
from clients.record.codec import decode_batch, encode_batch, iter_batches
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest
from kraft.metadata.image import BrokerRegistration, MetadataImage

log = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 1 << 20
TICK_FLOOR_MS = 100
RESTART_BACKOFF_S = 1.0
CREATE_TIMEOUT_S = 10.0


@dataclass
class _Slot:
    """Where a parked request's answer lands; `fallback` if the driver stops first."""

    done: trio.Event
    fallback: Any
    answer: Any = None


class LedPartitionDriver:
    """The trio side of one coordinator core. The core has `on_append_result(append_id, error,
    now_ms, base_offset)`, `next_deadline_ms()`, `tick(now_ms)` and `resign()`; its effects
    with a `handle` are answers, with an `append_id` appends, anything else goes to
    `_other_effect`. Subclasses say how to `_replay` a record and what `run` does once loaded."""

    topic = ""
    what = "records"  # what it appends, for the log
    record_errors: tuple[type[Exception], ...] = ()  # a record of these is skipped on load

    def __init__(
        self,
        replicas: ReplicaManager,
        partition: int,
        leader_epoch: int,
        core,
        *,
        clock_ms: Callable[[], int],
        commit_timeout_ms: int = 5_000,
    ) -> None:
        self.replicas = replicas
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.core = core
        self.clock_ms = clock_ms
        self.commit_timeout_s = commit_timeout_ms / 1000
        self._slots: dict[Hashable, _Slot] = {}
        self._handles = 0
        # Appended, not yet answered: (append id, what the append said, when to give up).
        self._inflight: collections.deque[tuple[int, ProduceResult, float]] = collections.deque()
        # Replication moved, a request came in or an append went out: waiters look again.
        self._changed = trio.lowlevel.ParkingLot()
        self.failed_appends = RateLimitedLog(logger=log)

    def poke(self) -> None:
        self._changed.unpark_all()

    def now(self) -> int:
        return self.clock_ms()

    # -- requests ---------------------------------------------------------------------------------
    async def ask(
        self, call: Callable[[Hashable, int], Iterable], fallback: Any, timeout_s: float = math.inf
    ) -> Any:
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

    def _run(self, effects: Iterable) -> None:
        for effect in effects:
            if hasattr(effect, "handle"):
                slot = self._slots.pop(effect.handle, None)
                if slot is not None:
                    slot.answer = effect.response
                    slot.done.set()
            elif hasattr(effect, "append_id"):
                self._append(effect)
            else:
                self._other_effect(effect)
        self.poke()  # deadlines may have moved; appends may wait

    def _other_effect(self, effect) -> None:
        raise TypeError(f"{type(self).__name__} cannot carry out {effect!r}")

    def _append(self, effect) -> None:
        now = self.clock_ms()
        batch = self._encode(effect, now)
        # The replica manager wakes the followers' parked fetches: they take it at once.
        result = self.replicas.append(
            self.topic, self.partition, batch, ACKS_ALL, now, coordinator=True
        )
        self._inflight.append(
            (effect.append_id, result, trio.current_time() + self.commit_timeout_s)
        )

    def _encode(self, effect, now: int) -> bytes:
        """The batch an append effect's (key, value) records go in."""
        return encode_batch([(key, value, (), now) for key, value in effect.records])

    # -- life ---------------------------------------------------------------------------------------
    def _stopped(self) -> None:
        """Leadership moved (or the driver failed): the core answers what it parked
        NOT_COORDINATOR, anything else parked gets its fallback."""
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
            hosted = self.replicas.get(self.topic, self.partition)
            if hosted is None or not hosted.is_leader or hosted.leader_epoch != self.leader_epoch:
                await trio.sleep_forever()  # LedPartitions cancels this driver
            log_ = hosted.log
            if log_.high_watermark >= log_.log_end_offset:
                break
            await self._changed.park()
        offset, end, replayed = log_.log_start_offset, log_.log_end_offset, 0
        while offset < end:
            offset = max(offset, log_.log_start_offset)  # retention may have moved the start
            data = log_.read(offset, LOAD_CHUNK_BYTES, max_offset=end).records
            if not data:
                break
            for pos, header in iter_batches(data):
                replayed += self._replay_batch(data, pos, header)
                offset = header.next_offset
            await trio.sleep(0)  # a big partition must not stall every other request
        return replayed

    def _replay_batch(self, data, pos: int, header) -> int:
        """Replay one batch of the partition at load; returns how many records it replayed."""
        return self._replay_records(decode_batch(data, pos)[1])

    def _replay_records(self, records, *extra) -> int:
        replayed = 0
        for record in records:
            try:
                self._replay(record.key or b"", record.value, record.offset, *extra)
                replayed += 1
            except self.record_errors as exc:
                # Not ours (e.g. written by a newer kraft): skip it rather than coordinate
                # nothing.
                log.warning(
                    "%s-%d offset %d skipped: %s", self.topic, self.partition, record.offset, exc
                )
        return replayed

    def _replay(self, key: bytes, value: bytes | None, offset: int, *extra) -> None:
        self.core.replay(key, value, offset, *extra)

    async def _tick_loop(self) -> None:
        while True:
            deadline, now = self.core.next_deadline_ms(), self.clock_ms()
            if deadline is not None and deadline <= now:
                self._run(self.core.tick(now))
                deadline = self.core.next_deadline_ms()
                if deadline is not None and deadline <= now:
                    # A deadline the tick left in the past would spin this loop and starve the
                    # broker: the core should never leave one, but look again later regardless.
                    log.error(
                        "%s-%d: the coordinator left deadline %d in the past",
                        self.topic,
                        self.partition,
                        deadline,
                    )
                    deadline = now + TICK_FLOOR_MS
            wait_s = math.inf if deadline is None else (deadline - now) / 1000
            with trio.move_on_after(wait_s):
                await self._changed.park()

    async def _commit_loop(self) -> None:
        """Answer appends in order, each once the high watermark passed it (every in-sync replica
        has it), failed, or not committed within the commit timeout."""
        while True:
            if not self._inflight:
                await self._changed.park()
                continue
            append_id, result, give_up = self._inflight[0]
            if result.error_code:
                error = ErrorCode(result.error_code)
                # The client hears only Kafka's code: the reason goes to the log, one line per
                # kind.
                self.failed_appends.warning(
                    error.name,
                    "%s-%d: %s not appended (%s): %s",
                    self.topic,
                    self.partition,
                    self.what,
                    error.name,
                    result.error_message,
                )
            else:
                error = await self.replicas.wait_committed(
                    self.topic, self.partition, result.last_offset, result.leader_epoch, give_up
                )
                if error is None:
                    error = ErrorCode.REQUEST_TIMED_OUT
            self._inflight.popleft()
            self._run(
                self.core.on_append_result(append_id, error, self.clock_ms(), result.base_offset)
            )


class LedPartitions:
    """A driver (`make_driver(partition, leader_epoch)`, with an async `run()`) for each
    partition of `topic` this broker leads; a new leader epoch loads afresh."""

    def __init__(
        self,
        replicas: ReplicaManager,
        topic: str,
        make_driver: Callable[[int, int], LedPartitionDriver],
    ) -> None:
        self.replicas = replicas
        self.topic = topic
        self.make_driver = make_driver
        self.drivers: dict[int, tuple[LedPartitionDriver, trio.CancelScope]] = {}
        self._changed = trio.Event()
        replicas.purgatory.watch(topic, self._partition_moved)

    def get(self, partition: int) -> LedPartitionDriver | None:
        entry = self.drivers.get(partition)
        return entry[0] if entry is not None else None

    def _partition_moved(self, partition: int) -> None:
        """Leadership, the log end, the high watermark or the ISR moved: look at leadership
        again, and wake that partition's driver (it may be loading)."""
        self._changed.set()
        entry = self.drivers.get(partition)
        if entry is not None:
            entry[0].poke()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                self._reconcile(nursery)
                await self._changed.wait()
                self._changed = trio.Event()

    def _reconcile(self, nursery: trio.Nursery) -> None:
        led = {
            p.partition: p.leader_epoch
            for p in self.replicas.partitions()
            if p.topic == self.topic and p.is_leader
        }
        for partition, (driver, scope) in list(self.drivers.items()):
            if led.get(partition) != driver.leader_epoch:
                scope.cancel()  # its run() resigns: parked requests hear NOT_COORDINATOR
                del self.drivers[partition]
        for partition, epoch in led.items():
            if partition not in self.drivers:
                driver = self.make_driver(partition, epoch)
                scope = trio.CancelScope()
                self.drivers[partition] = (driver, scope)
                nursery.start_soon(self._run_driver, scope, driver)

    async def _run_driver(self, scope: trio.CancelScope, driver: LedPartitionDriver) -> None:
        with scope:
            try:
                await driver.run()
            except Exception:
                # One partition's failure must not take the broker down: its clients hear
                # NOT_COORDINATOR for a moment, then a new driver loads the partition afresh.
                log.exception(
                    "the coordinator of %s-%d failed; restarting it in %.0f s",
                    self.topic,
                    driver.partition,
                    RESTART_BACKOFF_S,
                )
                await trio.sleep(RESTART_BACKOFF_S)
                if self.get(driver.partition) is driver:
                    del self.drivers[driver.partition]
                    self._changed.set()


# -- FindCoordinator's side ---------------------------------------------------------------------
def live_leader(image: MetadataImage, topic: str, partition: int) -> BrokerRegistration | None:
    """The partition's leader if it is a live (unfenced) broker: the coordinator to name."""
    found = image.topic(topic)
    reg = found.partitions.get(partition) if found is not None else None
    leader = image.broker(reg.leader) if reg is not None and reg.has_leader else None
    return None if leader is None or leader.fenced else leader


async def create_internal_topic(
    channel: ControllerChannel,
    metadata: BrokerMetadata,
    topic: CreatableTopic,
    timeout_s: float = CREATE_TIMEOUT_S,
) -> None:
    """Create an internal topic through the controller (CreateTopics' internal flag) unless it
    exists, and wait until this broker's image has it; KraftError COORDINATOR_NOT_AVAILABLE
    when either fails (the client retries FindCoordinator)."""
    response, _ = await channel.send_with_offset(
        CreateTopicsRequest((topic,), internal=True), timeout_s
    )
    result = response.topics[0]
    if result.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
        raise KraftError(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"could not create {topic.name}: {result.error_message}",
        )
    if result.error_code == ErrorCode.NONE:
        log.info(
            "created %s: %d partitions, replication factor %d, configs %s",
            topic.name,
            topic.num_partitions,
            topic.replication_factor,
            topic.configs,
        )
    if not await metadata.wait_for(lambda image: image.topic(topic.name) is not None, timeout_s):
        raise KraftError(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"{topic.name} was created but this broker has not seen it yet; retry",
        )
