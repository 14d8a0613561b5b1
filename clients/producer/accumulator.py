"""The producer's pure core: records go into per-partition batches; `drain` says which batches
each leader node should get now. No trio, grpc, clock or threads here: `now_ms` comes in.

Rules, in Kafka's words (RecordAccumulator):
- a record whose batch of one would exceed max_request_size (or buffer_memory) is refused at
  once with RecordTooLarge, naming the setting (KafkaProducer.ensureValidRecordSize): no
  request could ever carry it;
- a partition's last batch is open; a record that would push it past batch_size opens a new one
  (a record bigger than batch_size gets a batch of its own);
- a batch is ready when it is full (not the last), its linger has passed, a flush is pending, or
  it is a retry whose backoff has passed;
- a drain takes, per partition led by a node, ready batches from the head in order while the
  request stays under max_request_size, and only while that partition has fewer requests out
  than its limit (max_in_flight, or what `limit_of` says for it: 1 keeps strict order with no
  sequence numbers to restore it);
- a retry goes out only when its partition has no request out, so retries of one partition
  go one at a time, in creation order; so does a batch not full yet: it keeps collecting
  records while the partition's request is out (requests may overtake each other, so extra
  ones are for throughput: small ones racing would mostly come back out of order);
- a retried batch goes back to the head of its partition, before newer batches, and is sent
  in a request of its own: a leader that already appended it (an idempotent producer's retry)
  answers with its original offset, which would not fit a request that also carries new batches;
- a batch not in flight expires after delivery_timeout_ms; records waiting for metadata too;
- a transactional producer drains a partition only once it was added to the transaction
  (`allowed`); the others are reported `blocked`, for the sender to add them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from clients.producer.accumulator_drain import AccumulatorDrain
from clients.producer.producer_batch import (  # noqa: F401  (re-exported: callers import here)
    BATCH_OVERHEAD,
    RECORD_OVERHEAD,
    Drained,
    ProducerBatch,
    record_size,
    too_large,
)


class RecordAccumulator(AccumulatorDrain):
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        max_request_size: int,
        delivery_timeout_ms: int,
        retry_backoff_ms: int,
        max_in_flight: int,
        partitioner: Any,
        key_partitioner: Callable[[bytes, int], int],
        new_result: Callable[[str, int], Any],
        make_future: Callable[[Any, int, int], Any],
        buffer_memory: int | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.max_request_size = max_request_size
        self.buffer_memory = buffer_memory
        # A record's key and value may take this many bytes before its size needs a closer look
        # (the largest record whose batch of one fits both limits, without headers).
        self._fits = (
            min(max_request_size, buffer_memory or max_request_size)
            - BATCH_OVERHEAD
            - RECORD_OVERHEAD
        )
        self.delivery_timeout_ms = delivery_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.max_in_flight = max(1, max_in_flight)
        self._partitioner = partitioner
        self._key_partitioner = key_partitioner
        self._new_result = new_result
        self._make_future = make_future
        self._num_partitions: dict[str, int] = {}
        self._sticky: dict[str, int] = {}
        # topic -> the batch its sticky partition has open (append's fast path). A batch that
        # leaves its partition's deque is closed first, so a stale entry is never written to.
        self._open_sticky: dict[str, ProducerBatch] = {}
        self._batches: dict[tuple, deque] = {}
        self._in_flight: dict[tuple, int] = {}
        # topic -> [(key, value, headers, ts, partition, future, created_ms)] awaiting metadata
        self._pending: dict[str, list] = {}
        self._incomplete: set = set()
        self._seq = 0
        self._flushing = 0
        self.buffered_bytes = 0

    # --- the user's side -------------------------------------------------------------------

    def append(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers,
        timestamp_ms: int,
        now_ms: int,
        future: Any = None,
    ) -> tuple[Any, bool]:
        """Add one record; returns (future, wake): wake says the sender must look again (a batch
        was opened or filled). The future comes from `make_future(result, index, ts)`; future is
        None when `partition` does not exist (the caller fails the record). Raises
        RecordTooLarge, queueing nothing, for a record no request could carry."""
        if headers or (len(key) if key else 0) + (len(value) if value else 0) > self._fits:
            self._check_size(record_size(key, value, headers))
        if key is None and partition is None and not headers and future is None:
            # The common record (no key, no partition, no headers) joins the batch its sticky
            # partition has open, if it has room: where _place would put it, without its
            # lookups (about a fifth of a send's cost).
            batch = self._open_sticky.get(topic)
            if batch is not None and not batch.closed:
                size = RECORD_OVERHEAD + (len(value) if value else 0)
                if batch.size + size <= self.batch_size:
                    records = batch.records
                    records.append((None, value, headers, timestamp_ms))
                    batch.size += size
                    self.buffered_bytes += size
                    return self._make_future(batch.result, len(records) - 1, timestamp_ms), False
        n = self._num_partitions.get(topic)
        if n is None:
            if future is None:
                future = self._make_future(None, 0, timestamp_ms)
            self._pending.setdefault(topic, []).append(
                (key, value, headers, timestamp_ms, partition, future, now_ms)
            )
            self.buffered_bytes += record_size(key, value, headers)
            return future, len(self._pending[topic]) == 1
        placed = self._place(topic, n, partition, key, value, headers, timestamp_ms, now_ms)
        if placed is None:
            return None, False  # the caller fails the record: no such partition
        batch, wake = placed
        index = len(batch.records) - 1
        if future is None:
            return self._make_future(batch.result, index, timestamp_ms), wake
        future._place(batch.result, index)
        return future, wake

    def append_many(
        self, topic: str, partition: int | None, keys, values, timestamp_ms: int, now_ms: int
    ) -> tuple[list | None, bool]:
        """Add many records of a topic whose partition count is known, with no future each:
        returns (parts, wake), parts being [result, first index, count] per run of records that
        went to one batch, in order; parts is None when the topic's partition count is not
        known yet or `partition` does not exist (the caller appends one by one, or fails).
        Raises RecordTooLarge, queueing none of them, if any record is too large to send."""
        fits = self._fits
        if any(value is not None and len(value) > fits for value in values) or keys is not None:
            for i, value in enumerate(values):
                self._check_size(record_size(None if keys is None else keys[i], value, None))
        n = self._num_partitions.get(topic)
        if n is None or (partition is not None and not 0 <= partition < n):
            return None, False
        parts: list = []
        wake = False
        last = None
        place = self._place
        batch = None
        limit = self.batch_size
        for i, value in enumerate(values):
            if keys is None and batch is not None:
                # Fast path: no key, and the batch the previous record went to still has room
                # (where _place would put it too: the same partition's open batch).
                size = RECORD_OVERHEAD + (len(value) if value else 0)
                if batch.size + size <= limit:
                    batch.records.append((None, value, None, timestamp_ms))
                    batch.size += size
                    self.buffered_bytes += size
                    last[2] += 1
                    continue
            batch, opened = place(
                topic,
                n,
                partition,
                None if keys is None else keys[i],
                value,
                None,
                timestamp_ms,
                now_ms,
            )
            wake = wake or opened
            if last is not None and last[0] is batch.result:
                last[2] += 1
            else:
                last = [batch.result, len(batch.records) - 1, 1]
                parts.append(last)
        return parts, wake

    def _check_size(self, size: int) -> None:
        limit = self.max_request_size
        if size + BATCH_OVERHEAD > limit or (
            self.buffer_memory is not None and size + BATCH_OVERHEAD > self.buffer_memory
        ):
            raise too_large(size + BATCH_OVERHEAD, limit, self.buffer_memory)

    def _place(
        self,
        topic: str,
        n: int,
        partition: int | None,
        key,
        value,
        headers,
        timestamp_ms: int,
        now_ms: int,
    ) -> tuple[ProducerBatch, bool] | None:
        """Put one record in its partition's open batch, opening one if need be: (batch,
        opened); None when `partition` does not exist."""
        sticky = False
        if partition is None:
            if key is None:
                sticky = True
                partition = self._sticky.get(topic)
                if partition is None:
                    partition = self._sticky[topic] = self._partitioner.partition(topic, n)
            else:
                partition = self._key_partitioner(key, n)
        elif not 0 <= partition < n:
            return None
        size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        if headers:
            size = record_size(key, value, headers)
        self.buffered_bytes += size
        tp = (topic, partition)
        dq = self._batches.get(tp)
        opened = True
        if dq:
            batch = dq[-1]
            if not batch.closed and batch.size + size <= self.batch_size:
                opened = False
            else:
                batch.closed = True
                batch = None
        else:
            batch = None
        if batch is None and sticky:
            # KIP-480: when the sticky partition needs a new batch, move on to another one.
            self._partitioner.on_new_batch(topic, n, partition)
            partition = self._sticky[topic] = self._partitioner.partition(topic, n)
            tp = (topic, partition)
            dq = self._batches.get(tp)
            if dq and not dq[-1].closed and dq[-1].size + size <= self.batch_size:
                batch = dq[-1]
        if batch is None:
            batch = self._new_batch(tp, now_ms)
        if sticky:
            self._open_sticky[topic] = batch
        batch.records.append((key, value, headers, timestamp_ms))
        batch.size += size
        return batch, opened

    def _new_batch(self, tp: tuple, now_ms: int) -> ProducerBatch:
        self._seq += 1
        batch = ProducerBatch(tp[0], tp[1], self._new_result(tp[0], tp[1]), now_ms, self._seq)
        dq = self._batches.get(tp)
        if dq is None:
            dq = self._batches[tp] = deque()
        dq.append(batch)
        self._incomplete.add(batch)
        return batch

    # --- metadata -----------------------------------------------------------------------------

    def known_topics(self) -> set[str]:
        return set(self._num_partitions) | set(self._pending)

    def pending_topics(self) -> set[str]:
        return set(self._pending)

    def num_partitions(self, topic: str) -> int | None:
        return self._num_partitions.get(topic)

    def set_num_partitions(self, topic: str, n: int) -> list:
        """Metadata arrived for `topic`: place the records that waited for it. Returns the
        futures of those that named a partition that does not exist, for the caller to fail."""
        self._num_partitions[topic] = n
        if self._sticky.get(topic, 0) >= n:
            del self._sticky[topic]
            self._open_sticky.pop(topic, None)
        waiting = self._pending.pop(topic, ())
        bad = []
        for key, value, headers, ts, partition, future, created_ms in waiting:
            self.buffered_bytes -= record_size(key, value, headers)
            placed, _ = self.append(topic, partition, key, value, headers, ts, created_ms, future)
            if placed is None:
                bad.append(future)
        return bad

    def fail_pending(self, topic: str, now_ms: int | None = None) -> list:
        """Drop the records waiting for `topic` (all of them, or with now_ms only those past
        delivery_timeout_ms); returns their futures for the caller to fail."""
        waiting = self._pending.get(topic, [])
        if now_ms is None:
            keep, drop = [], waiting
        else:
            limit = now_ms - self.delivery_timeout_ms
            keep = [w for w in waiting if w[6] > limit]
            drop = [w for w in waiting if w[6] <= limit]
        if keep:
            self._pending[topic] = keep
        else:
            self._pending.pop(topic, None)
        for key, value, headers, *_ in drop:
            self.buffered_bytes -= record_size(key, value, headers)
        return [w[5] for w in drop]

    # --- flush ----------------------------------------------------------------------------------

    def begin_flush(self) -> tuple[list, list]:
        """Make everything ready now; returns (results of incomplete batches, futures of
        records still waiting for metadata) for the caller to wait on."""
        self._flushing += 1
        futures = [w[5] for waiting in self._pending.values() for w in waiting]
        return [b.result for b in self._incomplete], futures

    def end_flush(self) -> None:
        self._flushing -= 1

    def abort_all(self) -> tuple[list, list]:
        """Closing without delivering: every incomplete batch and every record waiting for
        metadata, for the caller to fail."""
        batches = list(self._incomplete)
        futures = [w[5] for waiting in self._pending.values() for w in waiting]
        for batch in batches:
            batch.closed = True
        self._incomplete.clear()
        self._batches.clear()
        self._open_sticky.clear()
        self._pending.clear()
        self.buffered_bytes = 0
        return batches, futures

    def abort_undrained(self) -> tuple[list, list]:
        """A transaction that will not commit: every batch not out now (retries included) and
        every record waiting for metadata, taken out for the caller to fail."""
        batches = [b for dq in self._batches.values() for b in dq]
        futures = [w[5] for waiting in self._pending.values() for w in waiting]
        for batch in batches:
            batch.closed = True
        for dq in self._batches.values():
            dq.clear()
        for waiting in self._pending.values():
            for key, value, headers, *_ in waiting:
                self.buffered_bytes -= record_size(key, value, headers)
        self._pending.clear()
        return batches, futures

    def has_undrained(self) -> bool:
        return any(self._batches.values()) or bool(self._pending)
