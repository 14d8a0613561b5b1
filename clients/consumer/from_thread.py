"""What AsyncConsumer offers pollers in other threads (the blocking Consumer): waiting for records,
taking the rebalance callbacks to run there, the positions reached, leaving the group."""

from __future__ import annotations

import time

from clients.consumer.coordinator import Callback, ConsumerCoordinator
from clients.consumer.fetcher import ConsumerRecord, Fetcher
from clients.types import TopicPartition


class FromThreads:
    """Mixed into AsyncConsumer. The plain methods are safe from any thread; the async ones run
    in the consumer's trio thread (a SyncRunner's `run`)."""

    _fetcher: Fetcher
    _group: ConsumerCoordinator | None
    max_poll_records: int

    def poll_from_thread(
        self, timeout_ms: int, max_records: int | None = None
    ) -> tuple[list[ConsumerRecord], bool]:
        """Block this thread (never the trio one) until records are buffered, or a rebalance
        callback or a group error waits for the poller, or timeout_ms passes. Returns
        (records, attention): with attention, run the callbacks and look again."""
        f, g = self._fetcher, self._group
        limit = max_records or self.max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000
        records, wake, attention = [], False, False
        with f.cond:
            while True:
                if g is not None and g.needs_attention_locked():
                    attention = True
                    break
                records, wake = f.take_locked(limit)
                if records or wake:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                f.cond.wait(left)
        if wake:
            f.wake()
        return records, attention

    def note_poll(self) -> None:
        """A poll started: max_poll_interval_ms counts from now."""
        if self._group is not None:
            self._group.note_poll()

    def take_rebalance_callback(self) -> Callback | None:
        """The next rebalance callback for the poller to run, in order (None: none is ready)."""
        if self._group is None:
            return None
        with self._fetcher.cond:
            return self._group.take_callback_locked()

    async def rebalance_callback_done(self, cb: Callback) -> None:
        """The poller ran `cb`: a revocation lets the rejoin go out."""
        self._group.callback_done(cb)

    def take_commit_outcomes(self) -> list[tuple]:
        """(callback, offsets, error) of finished commit_async calls, for the poller to call."""
        done = self._group.commits_done if self._group is not None else ()
        out = []
        while done:
            out.append(done.popleft())
        return out

    def raise_group_error(self) -> None:
        if self._group is not None and self._group.error is not None:
            raise self._group.error

    @property
    def rebalance_listener(self):
        return self._group.listener if self._group is not None else None

    def consumed_offsets(self, partitions=None) -> dict[TopicPartition, int]:
        """The positions poll has reached, of `partitions` (default: every assigned one):
        what a commit of "what was read" sends."""
        with self._fetcher.cond:
            return self._group.consumed_locked(partitions)

    def position_nowait(self, tp: TopicPartition) -> int | None:
        """`position` if known without asking a broker, else None."""
        with self._fetcher.cond:
            return self._fetcher.positions.get(TopicPartition(*tp))

    def leaving(self) -> tuple[set[TopicPartition], dict[TopicPartition, int], bool]:
        """Before leaving the group: (partitions the user was given, positions reached, lost),
        lost meaning they may be someone else's already (commit nothing then)."""
        g = self._group
        with self._fetcher.cond:
            owned = set(g.user_assignment)
            offsets = g.consumed_locked()
        return owned, offsets, g.core.lost

    async def leave_group(self, timeout_s: float) -> None:
        """After the revocation callback ran: LeaveGroup (a dynamic member) and forget the
        assignment."""
        await self._group.leave(timeout_s)
