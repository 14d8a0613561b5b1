"""AsyncProducer, the trio producer: `send` appends to the accumulator under a threading lock
(waiting for buffer memory if need be); the sender task in trio does all the I/O. Threads other
than the trio one (the blocking Producer in blocking.py) use `send_from_thread`."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import trio

from clients._service import BackgroundService
from clients._sync import Doorbell, TrioHome
from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError
from clients.partitioner import StickyPartitioner, default_partition
from clients.producer.accumulator import RecordAccumulator
from clients.producer.future import BatchResult, RecordFuture, RecordMetadata, RecordsFuture
from clients.producer.idempotence import IdempotenceManager
from clients.producer.producer_settings import (
    check_max_request_size,
    idempotence_enabled,
    parse_acks,
    partition_requests,
)
from clients.producer.producer_transactions import ProducerTransactions
from clients.producer.sender import Sender
from clients.producer.transaction import TransactionManager
from clients.producer.transactional import TransactionalDriver
from clients.record.compression import codec_from_name
from clients.security import client_security


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


class AsyncProducer(ProducerTransactions, BackgroundService):
    """Kafka's producer settings, same names. When buffer_memory bytes wait unsent, `send` (and
    `send_from_thread`) wait up to max_block_ms for the sender to free some, as Kafka's send
    does (buffer.memory, max.block.ms), then raise; `send_nowait` raises at once. A record
    larger than max_request_size (or buffer_memory) with its batch's overhead raises
    RecordTooLarge from every send; a record larger than batch_size goes in a batch of its own.

    With `transactional_id` (confluent-kafka's transactional API): init_transactions() once,
    then begin_transaction(), sends (and send_offsets_to_transaction for a consume-transform-
    produce loop), commit_transaction() or abort_transaction(); sends are allowed only inside a
    transaction. A fenced producer (a newer one took the transactional id) can only be closed."""

    def __init__(
        self,
        bootstrap_servers: str = "127.0.0.1:9092",
        *,
        acks: int | str | None = None,
        batch_size: int = 16384,
        linger_ms: int = 5,
        compression_type: str = "none",
        max_request_size: int = 1048576,
        request_timeout_ms: int = 30000,
        delivery_timeout_ms: int = 120000,
        buffer_memory: int = 33554432,
        max_in_flight_requests_per_connection: int = 5,
        retries: int = 2**31 - 1,
        retry_backoff_ms: int = 100,
        client_id: str = "kraft-producer",
        max_block_ms: int = 60000,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        **security: Any,
    ) -> None:
        transactional = transactional_id is not None
        acks = parse_acks(acks, transactional)
        check_max_request_size(max_request_size)
        # Idempotence: each batch carries (producer id, epoch, sequence) so the leader drops a
        # retry it already appended and refuses a gap; default with acks='all', as in Kafka.
        idempotence = (
            IdempotenceManager()
            if idempotence_enabled(enable_idempotence, acks, retries, transactional)
            else None
        )
        self.client_id = client_id
        self.acks = acks
        self.buffer_memory = buffer_memory
        self.max_block_ms = max_block_ms
        self._cluster = Cluster(
            bootstrap_servers,
            request_timeout_ms=request_timeout_ms,
            security=client_security(**security),
        )
        # A bare lock, never a Condition: threads that send (and may get a Ctrl-C) and the
        # sender in trio share the accumulator; see Doorbell for why.
        self._lock = threading.Lock()
        self._room = Doorbell()  # rung for threads waiting for buffer memory
        self._room_event = trio.Event()  # set for trio tasks waiting for it
        self._acc = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            max_request_size=max_request_size,
            delivery_timeout_ms=delivery_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            # Requests of one partition may reach the leader in either order (grpcio may run
            # two calls of one channel in either order on the server): without sequence
            # numbers to restore the order, one request per partition at a time; with
            # idempotence up to max_in_flight_requests_per_connection (at most 5, the batches
            # a leader remembers per producer), as Kafka. Several partitions overlap anyway.
            max_in_flight=partition_requests(
                idempotence is not None, max_in_flight_requests_per_connection
            ),
            partitioner=StickyPartitioner(),
            key_partitioner=default_partition,
            new_result=BatchResult,
            make_future=RecordFuture,
            buffer_memory=buffer_memory,
        )
        self._txn = (
            None
            if not transactional
            else TransactionalDriver(
                self._cluster,
                TransactionManager(transactional_id, transaction_timeout_ms),
                idempotence,
                self._lock,
                retry_backoff_ms=retry_backoff_ms,
            )
        )
        self._sender = Sender(
            self._acc,
            self._lock,
            self._cluster,
            acks=acks,
            compression=codec_from_name(compression_type),
            request_timeout_ms=request_timeout_ms,
            max_in_flight_per_node=max_in_flight_requests_per_connection,
            retries=retries,
            idempotence=idempotence,
            transactional=self._txn,
            memory_freed=self._memory_freed,
        )
        self._home = TrioHome()
        super().__init__(self._run)
        self._closed = False

    async def _run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self._home.settle()
        await self._sender.run(task_status=task_status)

    # --- lifecycle (start, serve, async with: BackgroundService) ----------------------------

    def _on_stopped(self) -> None:
        self._sender.abort(
            KraftError(
                ErrorCode.NETWORK_EXCEPTION, "the producer was closed before the record was sent"
            )
        )
        self._cluster.close()

    async def aclose(self, timeout: float | None = None) -> None:
        """Flush everything sent so far (waiting up to `timeout` seconds, None: as long as it
        takes), then stop; records still unsent then fail with NETWORK_EXCEPTION."""
        if self._closed:
            return
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout):
                await self.flush()
        finally:
            self._closed = True
            await self._stop()

    # --- sending ----------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers=None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue one record and return its future, which completes when the leader answers.
        Waits (up to max_block_ms) only while the buffer is full."""
        deadline = trio.current_time() + self.max_block_ms / 1000
        while True:
            room = self._room_event
            try:
                return self.send_nowait(
                    topic,
                    value,
                    key,
                    partition=partition,
                    headers=headers,
                    timestamp_ms=timestamp_ms,
                )
            except BufferFull:
                if trio.current_time() >= deadline:
                    raise self._still_full() from None
            with trio.move_on_at(deadline):
                await room.wait()

    def send_nowait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers=None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """`send` without waiting: raises BufferFull (a KraftError) when buffer_memory bytes
        wait unsent."""
        self._check_can_send()
        now = int(time.time() * 1000)
        with self._lock:
            if self._acc.buffered_bytes >= self.buffer_memory:
                raise BufferFull(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"the producer's buffer is full (buffer_memory="
                    f"{self.buffer_memory} bytes): await send() waits for room",
                )
            future, wake = self._acc.append(
                topic,
                partition,
                key,
                value,
                headers,
                now if timestamp_ms is None else timestamp_ms,
                now,
            )
        if wake or future is None:
            return self._sent(topic, partition, future, wake)
        return future

    def send_from_thread(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers=None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """`send` for any thread but the producer's trio thread (it would block the sender):
        blocks that thread up to max_block_ms while the buffer is full."""
        self._check_can_send()
        now = int(time.time() * 1000)
        with self._lock:  # a bare lock's `with` cannot be left half-done by a KeyboardInterrupt
            if self._acc.buffered_bytes >= self.buffer_memory:
                self._wait_for_room_locked()
            future, wake = self._acc.append(
                topic,
                partition,
                key,
                value,
                headers,
                now if timestamp_ms is None else timestamp_ms,
                now,
            )
        if wake or future is None:
            return self._sent(topic, partition, future, wake)
        return future

    def _check_can_send(self) -> None:
        if self._closed:
            raise KraftError(ErrorCode.NETWORK_EXCEPTION, "the producer is closed")
        if self._txn is not None:
            self._txn.core.check_in_transaction()

    # --- many records at once ----------------------------------------------------------------

    async def send_batch(
        self,
        topic: str,
        values,
        keys=None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        on_delivery=None,
    ) -> RecordsFuture:
        """Queue many records in one call (one lock, one clock reading, no future per record):
        `values` a sequence of bytes, `keys` None or a sequence as long. Records go where `send`
        would put them one by one. Waits (up to max_block_ms) only while the buffer is full;
        a call's records may take the buffer up to one call's size past buffer_memory.
        `on_delivery(error, metadata)` runs per record once its batch completes."""
        deadline = trio.current_time() + self.max_block_ms / 1000
        while True:
            room = self._room_event
            with self._lock:
                if self._acc.buffered_bytes < self.buffer_memory:
                    break
            if trio.current_time() >= deadline:
                raise self._still_full()
            with trio.move_on_at(deadline):
                await room.wait()
        return self._send_batch(
            topic, values, keys, partition, timestamp_ms, on_delivery, wait_for_room=False
        )

    def send_batch_from_thread(
        self,
        topic: str,
        values,
        keys=None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        on_delivery=None,
    ) -> RecordsFuture:
        """`send_batch` for any thread but the producer's trio thread: blocks that thread up to
        max_block_ms while the buffer is full."""
        return self._send_batch(
            topic, values, keys, partition, timestamp_ms, on_delivery, wait_for_room=True
        )

    def _send_batch(
        self, topic, values, keys, partition, timestamp_ms, on_delivery, *, wait_for_room: bool
    ) -> RecordsFuture:
        self._check_can_send()
        if keys is not None and len(keys) != len(values):
            raise ValueError(
                f"send_batch: {len(keys)} keys for {len(values)} values; give one "
                f"key per value, or keys=None"
            )
        now = int(time.time() * 1000)
        ts = now if timestamp_ms is None else timestamp_ms
        acc = self._acc
        with self._lock:
            if wait_for_room and acc.buffered_bytes >= self.buffer_memory:
                self._wait_for_room_locked()
            parts, wake = acc.append_many(topic, partition, keys, values, ts, now)
            if parts is None and acc.num_partitions(topic) is None:
                # The topic's metadata is not known yet: one by one, as `send` (rare).
                parts = []
                for i, value in enumerate(values):
                    future, opened = acc.append(
                        topic, partition, None if keys is None else keys[i], value, None, ts, now
                    )
                    parts.append(future)
                    wake = wake or opened
        if parts is None:
            future = self._sent(topic, partition, None, False)
            parts = [future] * len(values)
        elif wake:
            self._wake_sender()
        result = RecordsFuture(parts, ts)
        if on_delivery is not None:
            result.on_delivery(on_delivery)
        return result

    def _wait_for_room_locked(self) -> None:
        deadline = time.monotonic() + self.max_block_ms / 1000
        lock = self._lock
        while self._acc.buffered_bytes >= self.buffer_memory:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._still_full()
            try:
                lock.release()
                # Short steps: one ring wakes one waiter, the others look again soon.
                self._room.wait(min(left, 0.01))
            finally:
                lock.acquire()

    def _sent(self, topic: str, partition: int | None, future, wake: bool) -> RecordFuture:
        if wake:
            self._wake_sender()
        if future is None:
            return _failed(
                topic,
                partition,
                KraftError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"partition {partition} of topic '{topic}' does not exist (it has "
                    f"{self._acc.num_partitions(topic)} partitions)",
                ),
            )
        return future

    def _still_full(self) -> KraftError:
        return KraftError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"the producer's buffer stayed full for max_block_ms="
            f"{self.max_block_ms} (buffer_memory={self.buffer_memory} bytes): the "
            "brokers take records slower than they are sent; is the cluster "
            "reachable?",
        )

    def _wake_sender(self) -> None:
        """The sender looks at the accumulator again (from any thread; one wake-up in flight
        at a time from the others)."""
        sender = self._sender
        if self._home.is_home():
            sender.wake()
        elif not sender.wake_requested:
            sender.wake_requested = True
            self._home.call_soon(sender.wake_from_thread)

    def _memory_freed(self) -> None:
        """Trio thread, lock held: batches left the buffer; wake whoever waits for room."""
        self._room.ring()
        event, self._room_event = self._room_event, trio.Event()
        event.set()

    async def send_and_wait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers=None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        future = await self.send(
            topic, value, key, partition=partition, headers=headers, timestamp_ms=timestamp_ms
        )
        await _wait_future(future)
        return future._metadata()

    async def flush(self) -> None:
        """Wait until every record sent before this call is acknowledged or failed."""
        with self._lock:
            results, futures = self._acc.begin_flush()
        self._wake_sender()
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
                raise KraftError(
                    code,
                    f"topic '{topic}': {state.error_message if state else ''}"
                    f" (create it with: kraft topic create {topic})",
                )
            partitions = self._cluster.metadata.partitions_for(topic)
        return partitions


class BufferFull(KraftError):
    """send_nowait found buffer_memory bytes waiting unsent (Kafka's BufferExhaustedException)."""
