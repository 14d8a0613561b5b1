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
from clients.types import ConsumerGroupMetadata, TopicPartition

log = logging.getLogger(__name__)


class Consumer:
    """Same arguments and methods as AsyncConsumer, blocking. Listener methods run in the polling
    thread (so they may call commit, seek, ...); they cannot be `async def` here."""

    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", **kwargs) -> None:
        self._async = AsyncConsumer(bootstrap_servers, **kwargs)
        self._runner = SyncRunner("kraft-consumer")
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
        pos = self._async.position_nowait(tp)
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
        if self.group_id is not None:
            self._leave_group()

    def commit(self, offsets: dict | None = None) -> None:
        self._runner.run(self._async.commit, offsets)

    def commit_async(self, offsets: dict | None = None, callback=None) -> None:
        self._async.commit_async(offsets, callback)

    def group_metadata(self) -> ConsumerGroupMetadata:
        return self._async.group_metadata()

    def committed(self, partitions) -> dict[TopicPartition, int | None]:
        return self._runner.run(self._async.committed, partitions)

    def _commit_quietly(self, offsets: dict) -> None:
        try:
            self._runner.run(self._async.commit, offsets)
        except KraftError as exc:
            log.warning(
                "group %s: commit before giving partitions back failed: %s", self.group_id, exc
            )

    def _run_group_callbacks(self) -> None:
        a = self._async
        while (cb := a.take_rebalance_callback()) is not None:
            try:
                self._run_callback(cb)
            finally:
                self._runner.run(a.rebalance_callback_done, cb)
        for callback, offsets, error in a.take_commit_outcomes():
            callback(offsets, error)
        a.raise_group_error()

    def _run_callback(self, cb: Callback) -> None:
        a = self._async
        listener = a.rebalance_listener
        if cb.kind == "revoke":
            if a.enable_auto_commit and not cb.lost:
                offsets = a.consumed_offsets(cb.partitions)
                if offsets:
                    self._commit_quietly(offsets)
            if listener is not None and cb.partitions:
                _call_listener(listener, "revoked", cb.lost, set(cb.partitions))
        elif listener is not None:
            _call_listener(listener, "assigned", False, set(cb.partitions))

    def _leave_group(self) -> None:
        a = self._async
        owned, offsets, lost = a.leaving()
        try:
            if a.enable_auto_commit and offsets and not lost:
                self._commit_quietly(offsets)
            if owned and a.rebalance_listener is not None:
                _call_listener(a.rebalance_listener, "revoked", lost, owned)
        finally:
            self._runner.run(a.leave_group, self._timeout_s, timeout=self._timeout_s + 1)

    # --- reading ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 1000, max_records: int | None = None) -> list[ConsumerRecord]:
        a = self._async
        deadline = time.monotonic() + timeout_ms / 1000
        a.note_poll()
        while True:
            self._run_group_callbacks()
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            records, attention = a.poll_from_thread(left_ms, max_records)
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
            if self.group_id is not None:
                self._leave_group()
        finally:
            try:
                self._runner.run(self._async.aclose)
            finally:
                self._runner.close()

    def __enter__(self) -> Consumer:
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
        raise TypeError(
            "the blocking Consumer runs listener methods in the polling thread: "
            "make them plain functions, or use AsyncConsumer"
        )
