"""Consumer: the blocking facade of AsyncConsumer for scripts. Poll reads the prefetch buffer under
a lock without entering the trio thread; rebalance callbacks run in the thread that polls."""
from __future__ import annotations

import inspect
import logging
import time

from clients._sync import SyncRunner
from clients.consumer.consumer import AsyncConsumer
from clients.consumer.coordinator import Callback
from clients.consumer.fetcher import ConsumerRecord
from clients.errors import KraftError
from clients.types import TopicPartition

log = logging.getLogger(__name__)


class Consumer:
    """Same arguments and methods as AsyncConsumer, blocking. Listener methods run in the polling
    thread (so they may call commit, seek, ...); they cannot be `async def` here."""

    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", **kwargs) -> None:
        self._async = AsyncConsumer(bootstrap_servers, **kwargs)
        self._runner = SyncRunner("kraft-consumer")
        token = self._runner.token
        f = self._async._fetcher
        trio_wake = f.wake

        def wake_threadsafe() -> None:
            if not f.wake_requested:
                f.wake_requested = True
                token.run_sync_soon(trio_wake)

        f.wake = wake_threadsafe
        g = self._async._group
        if g is not None:
            group_wake = g.wake
            g.wake = lambda: token.run_sync_soon(group_wake)
        self._timeout_s = self._async.request_timeout_ms / 1000
        self._runner.start_service(self._async.serve)
        self._closed = False

    @property
    def group_id(self) -> str | None:
        return self._async.group_id

    # --- assignment and positions -----------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._async.assign(partitions)

    def assignment(self) -> set[TopicPartition]:
        return self._async.assignment()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._async.seek(tp, offset)

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._async.seek_to_beginning(*tps)

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._async.seek_to_end(*tps)

    def position(self, tp: TopicPartition) -> int:
        f = self._async._fetcher
        with f.cond:
            pos = f.positions.get(TopicPartition(*tp))
        if pos is not None:
            return pos
        return self._runner.run(self._async.position, tp)

    def pause(self, *tps: TopicPartition) -> None:
        self._async.pause(*tps)

    def resume(self, *tps: TopicPartition) -> None:
        self._async.resume(*tps)

    def paused(self) -> set[TopicPartition]:
        return self._async.paused()

    # --- groups -----------------------------------------------------------------------------

    def subscribe(self, topics=None, listener=None, *, pattern=None) -> None:
        self._async.subscribe(topics, listener, pattern=pattern)

    def subscription(self) -> set[str]:
        return self._async.subscription()

    def unsubscribe(self) -> None:
        if self._async._group is not None:
            self._leave_group()

    def commit(self, offsets: dict | None = None) -> None:
        self._runner.run(self._async.commit, offsets)

    def commit_async(self, offsets: dict | None = None, callback=None) -> None:
        g = self._async._require_group("commit_async")
        if offsets is None:
            with self._async._fetcher.cond:
                offsets = g.consumed_locked()
        self._runner.run_sync_soon(g.commit_async, offsets, callback)

    def committed(self, partitions) -> dict[TopicPartition, int | None]:
        return self._runner.run(self._async.committed, partitions)

    def _commit_quietly(self, offsets: dict) -> None:
        try:
            self._runner.run(self._async._group.commit, offsets)
        except KraftError as exc:
            log.warning("group %s: commit before giving partitions back failed: %s",
                        self.group_id, exc)

    def _run_group_callbacks(self) -> None:
        g = self._async._group
        f = self._async._fetcher
        while True:
            with f.cond:
                cb = g.take_callback_locked()
            if cb is None:
                break
            try:
                self._run_callback(cb)
            finally:
                self._runner.run(g.acallback_done, cb)
        while g.commits_done:
            callback, offsets, error = g.commits_done.popleft()
            callback(offsets, error)
        if g.error is not None:
            raise g.error

    def _run_callback(self, cb: Callback) -> None:
        g = self._async._group
        if cb.kind == "revoke":
            if self._async.enable_auto_commit and not cb.lost:
                with self._async._fetcher.cond:
                    offsets = g.consumed_locked(cb.partitions)
                if offsets:
                    self._commit_quietly(offsets)
            if g.listener is not None and cb.partitions:
                _call_listener(g.listener, "revoked", cb.lost, set(cb.partitions))
        elif g.listener is not None:
            _call_listener(g.listener, "assigned", False, set(cb.partitions))

    def _leave_group(self) -> None:
        g = self._async._group
        with self._async._fetcher.cond:
            owned = set(g.user_assignment)
            offsets = g.consumed_locked()
        lost = g.core.lost
        try:
            if self._async.enable_auto_commit and offsets and not lost:
                self._commit_quietly(offsets)
            if owned and g.listener is not None:
                _call_listener(g.listener, "revoked", lost, owned)
        finally:
            self._runner.run(g.leave, self._timeout_s, timeout=self._timeout_s + 1)

    # --- reading ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 1000, max_records: int | None = None) -> list[ConsumerRecord]:
        f = self._async._fetcher
        g = self._async._group
        limit = max_records or self._async.max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000
        if g is not None:
            g.note_poll()
        while True:
            if g is not None:
                self._run_group_callbacks()
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
            if not attention:
                return records

    # --- offsets and metadata ---------------------------------------------------------------

    def partitions_for_topic(self, topic: str) -> list[int]:
        return self._runner.run(self._async.partitions_for_topic, topic)

    def beginning_offsets(self, tps) -> dict[TopicPartition, int]:
        return self._runner.run(self._async.beginning_offsets, tps)

    def end_offsets(self, tps) -> dict[TopicPartition, int]:
        return self._runner.run(self._async.end_offsets, tps)

    def offsets_for_times(self, timestamps: dict) -> dict:
        return self._runner.run(self._async.offsets_for_times, timestamps)

    def close(self) -> None:
        """With a group: commit (auto-commit), the revocation callback in this thread, leave."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._async._group is not None:
                self._leave_group()
        finally:
            try:
                self._runner.run(self._async.aclose)
            finally:
                self._runner.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _call_listener(listener, what: str, lost: bool, partitions: set) -> None:
    method = None
    if what == "assigned":
        method = listener.on_partitions_assigned
    elif lost:
        method = getattr(listener, "on_partitions_lost", None)
    if method is None:
        method = listener.on_partitions_revoked
    result = method(partitions)
    if inspect.isawaitable(result):
        result.close()
        raise TypeError("the blocking Consumer runs listener methods in the polling thread: "
                        "make them plain functions, or use AsyncConsumer")
