"""Requests parked on partitions, as Kafka's DelayedProduce / DelayedFetch purgatory: a waiter
names the partitions it waits on and sleeps until one of them moves or its deadline passes.

Keyed by partition, so an append to A wakes no waiter of B (one broker-wide broadcast woke every
parked fetch and produce on every append). "Moved" means anything a waiter may be waiting for:
the high watermark, the ISR, the leadership, a truncation (acks=all answers, consumers' and
followers' fetches). A move of the log end alone (`end_moved`: an append that did not move the
high watermark) wakes only the waiters that read up to the log end, followers' fetches: with
replicas, a consumer's fetch or an acks=all answer woken by the append would find nothing new
and park again, on the leader's thread, while the followers' answers wait to be built. Waiters
re-check their own condition after each wake."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import trio

from clients.request_times import request_times

TopicPartition = tuple[str, int]


class _Waiter:
    __slots__ = ("event", "moved", "log_end")

    def __init__(self, log_end: bool) -> None:
        self.event = trio.Event()
        self.moved: set[TopicPartition] = set()
        self.log_end = log_end


class Purgatory:
    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[_Waiter]] = {}
        self._watchers: dict[str, list[Callable[[int], None]]] = {}

    def moved(self, topic: str, partition: int) -> None:
        """Something changed on `topic`-`partition`: wake its waiters (and only them)."""
        self._wake(topic, partition, log_end_only=False)

    def end_moved(self, topic: str, partition: int) -> None:
        """Only the log end of `topic`-`partition` moved: wake the waiters that read up to it
        (and the topic's watchers, which look at every move)."""
        self._wake(topic, partition, log_end_only=True)

    def _wake(self, topic: str, partition: int, *, log_end_only: bool) -> None:
        key = (topic, partition)
        for waiter in self._waiters.get(key, ()):
            if waiter.log_end or not log_end_only:
                waiter.moved.add(key)
                waiter.event.set()
        for watcher in self._watchers.get(topic, ()):
            watcher(partition)

    def watch(self, topic: str, callback: Callable[[int], None]) -> None:
        """Call `callback(partition)` on every move of one of `topic`'s partitions (the group
        coordinators follow the leadership of `__consumer_offsets` this way)."""
        self._watchers.setdefault(topic, []).append(callback)

    def parked(self) -> tuple[int, int]:
        """(requests waiting on a high watermark, ISR or leadership move: acks=all produces and
        consumers' fetches; followers' fetches waiting on the log end), each counted once
        however many partitions it waits on: Kafka's PurgatorySize."""
        waiters = set().union(*self._waiters.values()) if self._waiters else set()
        log_end = sum(1 for w in waiters if w.log_end)
        return len(waiters) - log_end, log_end

    def waiting(self, topic: str, partition: int) -> int:
        return len(self._waiters.get((topic, partition), ()))

    async def wait_moved(self, partitions: Iterable[TopicPartition], deadline: float) -> bool:
        """Until one of `partitions` moves (True) or trio's clock passes `deadline` (False)."""
        return bool(await self.wait_which_moved(partitions, deadline))

    async def wait_which_moved(
        self, partitions: Iterable[TopicPartition], deadline: float, *, log_end: bool = False
    ) -> set[TopicPartition]:
        """Until one of `partitions` moves: those that moved by the time this task runs again
        (empty if none did before trio's clock passed `deadline`). A parked fetch re-reads
        only those. `log_end`: a move of the log end alone wakes this waiter too."""
        waiter = _Waiter(log_end)
        keys = list(dict.fromkeys(partitions))
        for key in keys:
            self._waiters.setdefault(key, set()).add(waiter)
        times = request_times()  # the request's remote time, when metrics measure it
        if times is not None:
            times.park()
        try:
            with trio.move_on_at(deadline):
                await waiter.event.wait()
        finally:
            if times is not None:
                times.unpark()
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[key]
        return waiter.moved

    async def wait_until(
        self, partitions: Iterable[TopicPartition], ready: Callable[[], object], deadline: float
    ) -> object:
        """`ready()` once it answers something other than None, re-checked after each move of
        `partitions`; None if the deadline passes first."""
        keys = list(partitions)
        while True:
            answer = ready()
            if answer is not None:
                return answer
            if trio.current_time() >= deadline:
                return None
            await self.wait_moved(keys, deadline)
