"""The producer: AsyncProducer (trio) and Producer (blocking facade). `send` only appends to the
accumulator under a threading lock; the sender task in trio does all the I/O."""
from __future__ import annotations

import threading
import time
from typing import Any

import trio

from clients._service import BackgroundService
from clients._sync import SyncRunner
from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError
from clients.security import client_security
from clients.partitioner import StickyPartitioner, default_partition
from clients.producer.accumulator import RecordAccumulator
from clients.producer.future import BatchResult, RecordFuture, RecordMetadata
from clients.producer.idempotence import IdempotenceManager
from clients.producer.sender import Sender
from clients.record.compression import codec_from_name

PARTITION_REQUESTS_IN_FLIGHT = 1


def _parse_acks(acks: int | str) -> int:
    if acks in ("all", "-1", -1):
        return -1
    if acks in (0, 1, "0", "1"):
        return int(acks)
    raise ValueError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")


def _idempotence(enable: bool | None, acks: int, retries: int) -> bool:
    """Kafka's rule: on by default with acks=all; asking for it with anything else is an error."""
    if enable is None:
        return acks == -1 and retries > 0
    if enable and acks != -1:
        raise ValueError(f"enable_idempotence=True needs acks='all' (acks={acks} given): set "
                         f"acks='all', or enable_idempotence=False")
    if enable and retries <= 0:
        raise ValueError("enable_idempotence=True needs retries > 0: set retries, or "
                         "enable_idempotence=False")
    return bool(enable)


def _failed(topic: str, partition: int, exc: KraftError) -> RecordFuture:
    result = BatchResult(topic, partition)
    result.complete(-1, -1, exc)
    return RecordFuture(result, 0, -1)


async def _wait_result(result: BatchResult) -> None:
    """Trio side: every result is completed in the trio thread, so a trio.Event suffices."""
    if not result.done():
        event = trio.Event()
        result.on_done(event.set)
        await event.wait()


async def _wait_future(future: RecordFuture) -> None:
    while future._batch is None:  # rare: the record still waits for its topic's metadata
        await trio.sleep(0.005)
    await _wait_result(future._batch)


class AsyncProducer(BackgroundService):
    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", *, acks: int | str = 1,
                 batch_size: int = 16384, linger_ms: int = 5, compression_type: str = "none",
                 max_request_size: int = 1048576, request_timeout_ms: int = 30000,
                 delivery_timeout_ms: int = 120000, buffer_memory: int = 33554432,
                 max_in_flight_requests_per_connection: int = 5, retries: int = 2**31 - 1,
                 retry_backoff_ms: int = 100, client_id: str = "kraft-producer",
                 max_block_ms: int = 60000, enable_idempotence: bool | None = None,
                 **security: Any) -> None:
        acks = _parse_acks(acks)
        # Idempotence: each batch carries (producer id, epoch, sequence) so the leader drops a
        # retry it already appended and refuses a gap; default with acks='all', as in Kafka.
        idempotence = IdempotenceManager() \
            if _idempotence(enable_idempotence, acks, retries) else None
        self.client_id = client_id
        self.buffer_memory = buffer_memory
        self.max_block_ms = max_block_ms
        self._cluster = Cluster(bootstrap_servers, request_timeout_ms=request_timeout_ms,
                                security=client_security(**security))
        # A Condition over a plain Lock: `send` from user threads and the sender in trio share
        # the accumulator; the blocking facade waits on it when buffer_memory is used up.
        self._lock = threading.Condition(threading.Lock())
        self._acc = RecordAccumulator(
            batch_size=batch_size, linger_ms=linger_ms, max_request_size=max_request_size,
            delivery_timeout_ms=delivery_timeout_ms, retry_backoff_ms=retry_backoff_ms,
            # One request per partition at a time: grpcio may run two calls of one channel in
            # either order on the server, so a second request could be appended first. Several
            # partitions (up to max_in_flight_requests_per_connection requests) still overlap.
            max_in_flight=PARTITION_REQUESTS_IN_FLIGHT,
            partitioner=StickyPartitioner(), key_partitioner=default_partition,
            new_result=BatchResult, make_future=RecordFuture)
        self._sender = Sender(
            self._acc, self._lock, self._cluster, acks=acks,
            compression=codec_from_name(compression_type), request_timeout_ms=request_timeout_ms,
            max_in_flight_per_node=max_in_flight_requests_per_connection, retries=retries,
            idempotence=idempotence)
        self._wake = self._sender.wake
        super().__init__(self._sender.run)
        self._closed = False

    # --- lifecycle (start, _stop, async with: BackgroundService) ----------------------------

    def _on_stopped(self) -> None:
        self._sender.abort(KraftError(ErrorCode.NETWORK_EXCEPTION,
                                      "the producer was closed before the record was sent"))
        self._cluster.close()

    async def aclose(self) -> None:
        """Flush everything sent so far, then stop."""
        if self._closed:
            return
        try:
            await self.flush()
        finally:
            self._closed = True
            await self._stop()

    # --- sending ----------------------------------------------------------------------------

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, *,
             partition: int | None = None, headers=None,
             timestamp_ms: int | None = None) -> RecordFuture:
        """Queue one record and return at once; the future completes when the leader answers."""
        if self._closed:
            raise KraftError(ErrorCode.NETWORK_EXCEPTION, "the producer is closed")
        now = int(time.time() * 1000)
        if timestamp_ms is None:
            timestamp_ms = now
        acc = self._acc
        with self._lock:
            if acc.buffered_bytes >= self.buffer_memory:
                self._wait_for_space()
            future, wake = acc.append(topic, partition, key, value, headers, timestamp_ms, now)
        if wake:
            self._wake()
        if future is None:
            return _failed(topic, partition, KraftError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {partition} of topic '{topic}' does not exist (it has "
                f"{acc.num_partitions(topic)} partitions)"))
        return future

    def _wait_for_space(self) -> None:
        raise KraftError(ErrorCode.REQUEST_TIMED_OUT,
                         f"the producer's buffer is full (buffer_memory={self.buffer_memory} "
                         f"bytes): await flush() or send_and_wait() before sending more")

    async def send_and_wait(self, topic: str, value: bytes | None, key: bytes | None = None, *,
                            partition: int | None = None, headers=None,
                            timestamp_ms: int | None = None) -> RecordMetadata:
        while self._acc.buffered_bytes >= self.buffer_memory:
            await trio.sleep(0.001)
        future = self.send(topic, value, key, partition=partition, headers=headers,
                           timestamp_ms=timestamp_ms)
        await _wait_future(future)
        return future._metadata()

    async def flush(self) -> None:
        """Wait until every record sent before this call is acknowledged or failed."""
        with self._lock:
            results, futures = self._acc.begin_flush()
        self._sender.wake()
        try:
            for r in results:
                await _wait_result(r)
            for f in futures:
                await _wait_future(f)
        finally:
            with self._lock:
                self._acc.end_flush()

    async def partitions_for(self, topic: str) -> list[int]:
        partitions = self._cluster.metadata.partitions_for(topic)
        if partitions is None:
            resp = await self._cluster.refresh([topic], allow_auto_create=True)
            self._sender._apply_metadata(resp)
            state = self._cluster.metadata.topics.get(topic)
            if state is None or state.error_code:
                code = state.error_code if state else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                raise KraftError(code, f"topic '{topic}': {state.error_message if state else ''}"
                                       f" (create it with: kraft topic create {topic})")
            partitions = self._cluster.metadata.partitions_for(topic)
        return partitions


class Producer:
    """The blocking producer for scripts: same arguments as AsyncProducer. `send` never enters
    the trio thread; it wakes the sender only when a batch opens or fills."""

    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", **kwargs) -> None:
        self._async = AsyncProducer(bootstrap_servers, **kwargs)
        self._runner = SyncRunner("kraft-producer")
        sender = self._async._sender
        token = self._runner.token

        def wake_threadsafe() -> None:
            if not sender.wake_requested:
                sender.wake_requested = True
                token.run_sync_soon(sender.wake)

        self._async._wake = wake_threadsafe
        self._async._wait_for_space = self._wait_for_space
        self._runner.start_service(self._async._serve)
        self._closed = False

    def _wait_for_space(self) -> None:
        """Called with the lock held: block (up to max_block_ms) until the sender frees memory."""
        a = self._async
        deadline = time.monotonic() + a.max_block_ms / 1000
        while a._acc.buffered_bytes >= a.buffer_memory:
            left = deadline - time.monotonic()
            if left <= 0 or not a._lock.wait(left):
                if a._acc.buffered_bytes >= a.buffer_memory:
                    raise KraftError(ErrorCode.REQUEST_TIMED_OUT,
                                     f"the producer's buffer stayed full for max_block_ms="
                                     f"{a.max_block_ms}; is the broker reachable?")

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, *,
             partition: int | None = None, headers=None,
             timestamp_ms: int | None = None) -> RecordFuture:
        return self._async.send(topic, value, key, partition=partition, headers=headers,
                                timestamp_ms=timestamp_ms)

    def flush(self, timeout: float | None = None) -> None:
        self._runner.run(self._async.flush, timeout=timeout)

    def partitions_for(self, topic: str) -> list[int]:
        return self._runner.run(self._async.partitions_for, topic)

    def close(self, timeout: float | None = None) -> None:
        """Flush (waiting up to `timeout` seconds), then stop; records still unsent after the
        timeout fail with NETWORK_EXCEPTION."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._async.flush, timeout=timeout)
        except KraftError:
            pass
        finally:
            self._async._closed = True
            try:
                self._runner.run(self._async._stop)
            finally:
                self._runner.close()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
