"""The consumer: AsyncConsumer (trio) and Consumer (blocking facade) over one Fetcher. Manual
assignment and seeks; poll reads the prefetched buffer and never waits on an RPC when it has data."""
from __future__ import annotations

import time

import trio

from clients._service import BackgroundService
from clients._sync import SyncRunner
from clients.cluster import Cluster
from clients.consumer.fetcher import ConsumerRecord, Fetcher
from clients.errors import ErrorCode, KraftError
from clients.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition


class AsyncConsumer(BackgroundService):
    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", *, fetch_min_bytes: int = 1,
                 fetch_max_wait_ms: int = 500, fetch_max_bytes: int = 52428800,
                 max_partition_fetch_bytes: int = 1048576, max_poll_records: int = 500,
                 auto_offset_reset: str = "latest", client_id: str = "kraft-consumer",
                 check_crcs: bool = True, request_timeout_ms: int = 30000) -> None:
        self.client_id = client_id
        self.max_poll_records = max_poll_records
        self._cluster = Cluster(bootstrap_servers, request_timeout_ms=request_timeout_ms)
        self._fetcher = Fetcher(
            self._cluster, fetch_min_bytes=fetch_min_bytes, fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes, max_partition_fetch_bytes=max_partition_fetch_bytes,
            auto_offset_reset=auto_offset_reset, check_crcs=check_crcs,
            request_timeout_ms=request_timeout_ms)
        super().__init__(self._fetcher.run)

    # --- lifecycle (start, aclose, async with: BackgroundService) ---------------------------

    def _on_stopped(self) -> None:
        self._cluster.close()

    # --- assignment and positions -----------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
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
            for tp in (tps or list(f.assigned)):
                f.reset_locked(TopicPartition(*tp), timestamp)
        f.wake()

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record poll returns for `tp` (resolving a pending reset)."""
        tp = TopicPartition(*tp)
        f = self._fetcher
        while True:
            with f.cond:
                f._check_assigned(tp)
                if tp in f.positions:
                    return f.positions[tp]
                reset = f.resets.get(tp)
            if reset is None:
                raise KraftError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"{tp.topic}-{tp.partition} has no position and "
                                 f"auto_offset_reset='none'; seek() first")
            await f.resolve({tp})

    # --- reading ----------------------------------------------------------------------------

    async def poll(self, timeout_ms: int = 1000,
                   max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from the prefetch buffer as soon as there are some; [] after timeout_ms."""
        f = self._fetcher
        limit = max_records or self.max_poll_records
        deadline = trio.current_time() + timeout_ms / 1000
        while True:
            with f.cond:
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
            raise KraftError(code, f"topic '{topic}' does not exist; create it with: "
                                   f"kraft topic create {topic}")
        return sorted(state.partitions)

    async def beginning_offsets(self, tps) -> dict[TopicPartition, int]:
        answers = await self._fetcher.list_offsets(
            {TopicPartition(*tp): EARLIEST_TIMESTAMP for tp in tps})
        return {tp: offset for tp, (offset, _ts) in answers.items()}

    async def end_offsets(self, tps) -> dict[TopicPartition, int]:
        answers = await self._fetcher.list_offsets(
            {TopicPartition(*tp): LATEST_TIMESTAMP for tp in tps})
        return {tp: offset for tp, (offset, _ts) in answers.items()}

    async def offsets_for_times(self, timestamps: dict) -> dict:
        """{tp: ts} -> {tp: (offset, timestamp)} of the first record with timestamp >= ts, or
        None when there is none."""
        if any(ts < 0 for ts in timestamps.values()):
            raise ValueError("offsets_for_times takes timestamps in ms >= 0")
        answers = await self._fetcher.list_offsets(
            {TopicPartition(*tp): ts for tp, ts in timestamps.items()})
        return {tp: (None if offset < 0 else (offset, ts)) for tp, (offset, ts) in answers.items()}


class Consumer:
    """The blocking consumer for scripts: same arguments and methods as AsyncConsumer. `poll`
    reads the prefetch buffer under a lock without entering the trio thread."""

    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", **kwargs) -> None:
        self._async = AsyncConsumer(bootstrap_servers, **kwargs)
        self._runner = SyncRunner("kraft-consumer")
        f = self._async._fetcher
        token = self._runner.token
        trio_wake = f.wake

        def wake_threadsafe() -> None:
            if not f.wake_requested:
                f.wake_requested = True
                token.run_sync_soon(trio_wake)

        f.wake = wake_threadsafe
        self._runner.start_service(self._async._serve)
        self._closed = False

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

    def poll(self, timeout_ms: int = 1000, max_records: int | None = None) -> list[ConsumerRecord]:
        f = self._async._fetcher
        limit = max_records or self._async.max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000
        with f.cond:
            while True:
                records, wake = f.take_locked(limit)
                if records or wake:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                f.cond.wait(left)
        if wake:
            f.wake()
        return records

    def partitions_for_topic(self, topic: str) -> list[int]:
        return self._runner.run(self._async.partitions_for_topic, topic)

    def beginning_offsets(self, tps) -> dict[TopicPartition, int]:
        return self._runner.run(self._async.beginning_offsets, tps)

    def end_offsets(self, tps) -> dict[TopicPartition, int]:
        return self._runner.run(self._async.end_offsets, tps)

    def offsets_for_times(self, timestamps: dict) -> dict:
        return self._runner.run(self._async.offsets_for_times, timestamps)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._async.aclose)
        finally:
            self._runner.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
