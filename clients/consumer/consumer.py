"""AsyncConsumer (trio) over one Fetcher: manual assignment and seeks, or a consumer group
(subscribe, commits, rebalance callbacks); poll reads the prefetched buffer and never waits on an
RPC when it has data. The blocking facade is Consumer (blocking.py)."""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any

import trio

from clients._service import BackgroundService
from clients.cluster import Cluster
from clients.consumer.coordinator import Callback, ConsumerCoordinator
from clients.consumer.fetcher import ConsumerRecord, Fetcher
from clients.consumer.from_thread import FromThreads
from clients.consumer.membership import MembershipConfig
from clients.errors import ErrorCode, KraftError
from clients.security import client_security
from clients.types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerGroupMetadata,
    TopicPartition,
)

log = logging.getLogger(__name__)
RETRY_BACKOFF_S = 0.1


class AsyncConsumer(FromThreads, BackgroundService):
    """Kafka's consumer settings, same names. With `group_id`, `subscribe` joins the group and
    commits go to it; `enable_auto_commit` then defaults to True (every auto_commit_interval_ms,
    before each rebalance and on close)."""

    def __init__(
        self,
        bootstrap_servers: str = "127.0.0.1:9092",
        *,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        max_poll_records: int = 500,
        auto_offset_reset: str = "latest",
        client_id: str = "kraft-consumer",
        check_crcs: bool = True,
        request_timeout_ms: int = 30000,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300000,
        partition_assignment_strategy: list[str] | tuple[str, ...] = ("range", "sticky"),
        enable_auto_commit: bool | None = None,
        auto_commit_interval_ms: int = 5000,
        metadata_max_age_ms: int = 300000,
        retry_backoff_ms: int = 100,
        isolation_level: str = "read_uncommitted",
        **security: Any,
    ) -> None:
        self.client_id = client_id
        self.max_poll_records = max_poll_records
        self.request_timeout_ms = request_timeout_ms
        # How long position() and the offset lookups retry through a leader change (Kafka's
        # default.api.timeout.ms plays this part; ours is the request timeout).
        self._api_timeout_s = request_timeout_ms / 1000
        self._cluster = Cluster(
            bootstrap_servers,
            request_timeout_ms=request_timeout_ms,
            security=client_security(**security),
        )
        self._fetcher = Fetcher(
            self._cluster,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            auto_offset_reset=auto_offset_reset,
            check_crcs=check_crcs,
            request_timeout_ms=request_timeout_ms,
            isolation_level=isolation_level,
        )
        if enable_auto_commit and group_id is None:
            raise ValueError("enable_auto_commit needs a group_id to commit to")
        self.enable_auto_commit = bool(
            group_id is not None if enable_auto_commit is None else enable_auto_commit
        )
        self._group: ConsumerCoordinator | None = None
        if group_id is not None:
            config = MembershipConfig(
                group_id,
                group_instance_id=group_instance_id,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms,
                assignors=tuple(partition_assignment_strategy),
                retry_backoff_ms=retry_backoff_ms,
            )
            self._fetcher.group_id = group_id
            self._group = ConsumerCoordinator(
                self._cluster,
                self._fetcher,
                config,
                client_id=client_id,
                enable_auto_commit=self.enable_auto_commit,
                auto_commit_interval_ms=auto_commit_interval_ms,
                metadata_max_age_ms=metadata_max_age_ms,
                request_timeout_ms=request_timeout_ms,
            )
        elif group_instance_id is not None:
            raise ValueError("group_instance_id needs a group_id")
        super().__init__(self._run)

    @property
    def group_id(self) -> str | None:
        return self._group.group_id if self._group is not None else None

    async def _run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self._fetcher.run)
            if self._group is not None:
                await nursery.start(self._group.run)
            task_status.started()

    # --- lifecycle (start, aclose, async with: BackgroundService) ---------------------------

    def _on_stopped(self) -> None:
        self._cluster.close()

    async def aclose(self) -> None:
        """With a group: commit (auto-commit), run the revocation callback and leave the group
        (a static member does not send LeaveGroup), all within request_timeout_ms."""
        if (
            self._group is not None
            and self._close_requested is not None
            and not self._close_requested.is_set()
        ):
            with trio.move_on_after(self.request_timeout_ms / 1000):
                await self._leave_group()
        await self._stop()

    async def _leave_group(self) -> None:
        owned, offsets, lost = self.leaving()
        try:
            if self.enable_auto_commit and offsets and not lost:
                await self._commit_quietly(offsets)
            if owned and self.rebalance_listener is not None:
                await _call_listener(self.rebalance_listener, lost, owned)
        finally:
            await self.leave_group(self.request_timeout_ms / 1000)

    # --- group membership -------------------------------------------------------------------

    def subscribe(
        self, topics=None, listener=None, *, pattern: str | re.Pattern | None = None
    ) -> None:
        """Join the group for `topics` (a list of names, or a compiled regex matching whole topic
        names, internal topics excepted; `pattern=` takes a regex string). `listener` gets the
        rebalance callbacks (ConsumerRebalanceListener). Partitions come with a later poll."""
        g = self._require_group("subscribe")
        with self._fetcher.cond:
            if self._fetcher.assigned and g.wanted is None:
                raise KraftError(
                    ErrorCode.INVALID_REQUEST,
                    "this consumer has partitions from assign(); subscribe() and "
                    "assign() are exclusive: assign([]) first",
                )
        g.wanted = _subscription(topics, pattern)
        g.listener = listener
        g.wake()

    def subscription(self) -> set[str]:
        """The topics the group membership is for (a pattern's current matches)."""
        g = self._group
        if g is None or g.wanted is None:
            return set()
        if isinstance(g.wanted, re.Pattern):
            return set(g.core.subscription or ())
        return set(g.wanted)

    async def unsubscribe(self) -> None:
        """Commit (auto-commit), run the revocation callback and leave the group."""
        if self._group is not None:
            await self._leave_group()

    async def _commit_quietly(self, offsets: dict) -> None:
        try:
            await self._group.commit(offsets)
        except KraftError as exc:
            log.warning(
                "group %s: commit before giving partitions back failed: %s", self.group_id, exc
            )

    def _require_group(self, what: str) -> ConsumerCoordinator:
        if self._group is None:
            raise KraftError(
                ErrorCode.INVALID_GROUP_ID,
                f"{what}() needs a consumer group: create the consumer with group_id='my-group'",
            )
        return self._group

    async def _run_group_callbacks(self) -> None:
        """Rebalance callbacks, in order, in the polling task; then commit_async callbacks."""
        while (cb := self.take_rebalance_callback()) is not None:
            try:
                await self._run_callback(cb)
            finally:
                await self.rebalance_callback_done(cb)
        for callback, offsets, error in self.take_commit_outcomes():
            result = callback(offsets, error)
            if inspect.isawaitable(result):
                await result
        self.raise_group_error()

    async def _run_callback(self, cb: Callback) -> None:
        listener = self.rebalance_listener
        if cb.kind == "revoke":
            if self.enable_auto_commit and not cb.lost:
                await self._commit_quietly(self.consumed_offsets(cb.partitions))
            if listener is not None and cb.partitions:
                await _call_listener(listener, cb.lost, set(cb.partitions))
        elif listener is not None:
            result = listener.on_partitions_assigned(set(cb.partitions))
            if inspect.isawaitable(result):
                await result

    # --- commits ----------------------------------------------------------------------------

    async def commit(self, offsets: dict | None = None) -> None:
        """Commit `offsets` ({tp: next offset to read}), by default the position of every
        assigned partition: what poll returned. Raises KraftError when it failed."""
        g = self._require_group("commit")
        await g.commit(self.consumed_offsets() if offsets is None else offsets)

    def commit_async(self, offsets: dict | None = None, callback=None) -> None:
        """Commit in the background; `callback(offsets, error_or_None)` runs in a later poll."""
        g = self._require_group("commit_async")
        g.commit_async(self.consumed_offsets() if offsets is None else offsets, callback)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group, generation and member id (confluent-kafka's
        ConsumerGroupMetadata), for a transactional producer's send_offsets_to_transaction;
        generation -1 and no member id while it is not in a generation."""
        g = self._require_group("group_metadata")
        core = g.core
        return ConsumerGroupMetadata(
            g.group_id, core.generation, core.member_id, core.config.group_instance_id
        )

    async def committed(self, partitions) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition, None where there is none."""
        return await self._require_group("committed").committed(partitions)

    # --- pause and resume -------------------------------------------------------------------

    def pause(self, *tps: TopicPartition) -> None:
        with self._fetcher.cond:
            self._fetcher.pause_locked(tps)
        self._fetcher.wake()

    def resume(self, *tps: TopicPartition) -> None:
        with self._fetcher.cond:
            self._fetcher.resume_locked(tps)
        self._fetcher.wake()

    def paused(self) -> set[TopicPartition]:
        with self._fetcher.cond:
            return set(self._fetcher.paused)

    # --- assignment and positions -----------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
        if self._group is not None and self._group.wanted is not None:
            raise KraftError(
                ErrorCode.INVALID_REQUEST,
                "this consumer subscribed to a group; subscribe() and assign() are "
                "exclusive: unsubscribe() first",
            )
        with self._fetcher.cond:
            self._fetcher.assign_locked(partitions)
        self._fetcher.wake()

    def assignment(self) -> set[TopicPartition]:
        with self._fetcher.cond:
            return set(self._fetcher.assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        with self._fetcher.cond:
            self._fetcher.seek_locked(TopicPartition(*tp), offset)
        self._fetcher.wake()

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._reset(tps, EARLIEST_TIMESTAMP)

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._reset(tps, LATEST_TIMESTAMP)

    def _reset(self, tps, timestamp: int) -> None:
        f = self._fetcher
        with f.cond:
            for tp in tps or list(f.assigned):
                f.reset_locked(TopicPartition(*tp), timestamp)
        f.wake()

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record poll returns for `tp` (resolving a pending reset)."""
        tp = TopicPartition(*tp)
        f = self._fetcher
        deadline = trio.current_time() + self.request_timeout_ms / 1000
        backoff = RETRY_BACKOFF_S
        while True:
            with f.cond:
                f._check_assigned(tp)
                if tp in f.positions:
                    return f.positions[tp]
                reset = f.resets.get(tp)
            if reset is None:
                raise KraftError(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    f"{tp.topic}-{tp.partition} has no position and "
                    f"auto_offset_reset='none'; seek() first",
                )
            try:
                await f.resolve({tp})
            except KraftError as exc:
                # Its leader may have died: resolve forgot it, so the next try asks again.
                if not exc.retriable or trio.current_time() + backoff >= deadline:
                    raise
                await trio.sleep(backoff)
                backoff = min(1.0, backoff * 2)

    # --- reading ----------------------------------------------------------------------------

    async def poll(
        self, timeout_ms: int = 1000, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Records from the prefetch buffer as soon as there are some; [] after timeout_ms."""
        f = self._fetcher
        g = self._group
        limit = max_records or self.max_poll_records
        deadline = trio.current_time() + timeout_ms / 1000
        self.note_poll()
        while True:
            if g is not None:
                await self._run_group_callbacks()
            with f.cond:
                if g is not None and g.needs_attention_locked():
                    continue
                records, wake = f.take_locked(limit)
            if wake:
                f.wake()
            if records:
                return records
            left = deadline - trio.current_time()
            if left <= 0:
                return []
            await f.wait_for_data(left)

    # --- offsets and metadata ---------------------------------------------------------------

    async def partitions_for_topic(self, topic: str) -> list[int]:
        await self._cluster.refresh([topic])
        state = self._cluster.metadata.topics.get(topic)
        if state is None or state.error_code:
            code = state.error_code if state else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            raise KraftError(
                code, f"topic '{topic}' does not exist; create it with: kraft topic create {topic}"
            )
        return sorted(state.partitions)

    async def beginning_offsets(self, tps) -> dict[TopicPartition, int]:
        answers = await self._fetcher.list_offsets_until(
            {TopicPartition(*tp): EARLIEST_TIMESTAMP for tp in tps}, self._api_timeout_s
        )
        return {tp: offset for tp, (offset, _ts) in answers.items()}

    async def end_offsets(self, tps) -> dict[TopicPartition, int]:
        answers = await self._fetcher.list_offsets_until(
            {TopicPartition(*tp): LATEST_TIMESTAMP for tp in tps}, self._api_timeout_s
        )
        return {tp: offset for tp, (offset, _ts) in answers.items()}

    async def offsets_for_times(self, timestamps: dict) -> dict:
        """{tp: ts} -> {tp: (offset, timestamp)} of the first record with timestamp >= ts, or
        None when there is none."""
        if any(ts < 0 for ts in timestamps.values()):
            raise ValueError("offsets_for_times takes timestamps in ms >= 0")
        answers = await self._fetcher.list_offsets_until(
            {TopicPartition(*tp): ts for tp, ts in timestamps.items()}, self._api_timeout_s
        )
        return {tp: (None if offset < 0 else (offset, ts)) for tp, (offset, ts) in answers.items()}


def _subscription(topics, pattern) -> frozenset[str] | re.Pattern:
    if pattern is not None:
        if topics is not None:
            raise ValueError("subscribe() takes topics or a pattern, not both")
        return re.compile(pattern) if isinstance(pattern, str) else pattern
    if isinstance(topics, re.Pattern):
        return topics
    if isinstance(topics, str):
        topics = [topics]
    names = frozenset(topics or ())
    if not names or not all(isinstance(t, str) and t for t in names):
        raise ValueError(f"subscribe() needs topic names or a pattern, got {topics!r}")
    return names


async def _call_listener(listener, lost: bool, partitions: set) -> None:
    method = getattr(listener, "on_partitions_lost", None) if lost else None
    if method is None:
        method = listener.on_partitions_revoked
    result = method(partitions)
    if inspect.isawaitable(result):
        await result
