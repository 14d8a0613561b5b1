"""What `send` hands back: one tiny RecordFuture per record pointing at its batch's shared
BatchResult (a record's offset is the batch's base offset plus its index)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from clients.errors import ErrorCode, KraftError

log = logging.getLogger(__name__)
# Guards only records that wait for metadata (no batch yet): a rare path, so one lock for all.
_pending_lock = threading.Lock()
# Orders callback registration against completion; held for a few instructions per batch.
_callback_lock = threading.Lock()


_NO_ARG = object()


def _run_callback(fn: Callable, arg: object = _NO_ARG) -> None:
    try:
        fn() if arg is _NO_ARG else fn(arg)
    except Exception:  # a user's callback must not kill the sender
        log.exception("producer callback raised")


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


class BatchResult:
    """Completion state shared by every record of one batch. Completed once, from the sender;
    waited on from any thread (threading.Event) or from trio (callbacks set a trio.Event)."""

    __slots__ = (
        "topic",
        "partition",
        "base_offset",
        "log_append_time",
        "error",
        "_event",
        "_callbacks",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error: KraftError | None = None
        self._event = threading.Event()
        self._callbacks: list | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def complete(
        self, base_offset: int, log_append_time: int = -1, error: KraftError | None = None
    ) -> None:
        with _callback_lock:
            if self._event.is_set():
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, None
        if callbacks:
            for i in range(0, len(callbacks), 2):
                _run_callback(callbacks[i], callbacks[i + 1])

    def on_done(self, fn: Callable, arg: object = _NO_ARG) -> None:
        """Run `fn()`, or `fn(arg)`, once done: on the completing thread, or here when already
        done. The pair is kept flat in one list, not as a closure: a record's callback (a
        sampled latency, a user's add_done_callback) lives until its batch completes, and each
        object it takes is one more for the garbage collector's full passes to walk."""
        with _callback_lock:
            if not self._event.is_set():
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks += (fn, arg)
                return
        _run_callback(fn, arg)

    def wait(self, timeout: float | None) -> bool:
        return self._event.wait(timeout)


class RecordFuture:
    """The outcome of one `send`: done(), result(timeout), exception(), add_done_callback(fn)."""

    __slots__ = ("_batch", "_index", "_timestamp", "_callbacks")

    def __init__(self, batch: BatchResult | None, index: int, timestamp: int) -> None:
        self._batch = batch  # None while the record waits for its topic's metadata
        self._index = index
        self._timestamp = timestamp
        self._callbacks = None

    def _place(self, batch: BatchResult, index: int) -> None:
        """The sender put a record that waited for metadata into a batch (or failed it)."""
        with _pending_lock:
            self._index = index
            self._batch = batch
            callbacks, self._callbacks = self._callbacks, None
        for fn in callbacks or ():
            batch.on_done(lambda fn=fn: fn(self))

    def done(self) -> bool:
        return self._batch is not None and self._batch.done()

    def _metadata(self) -> RecordMetadata:
        b = self._batch
        if b.error is not None:
            raise b.error
        offset = b.base_offset + self._index if b.base_offset >= 0 else -1
        ts = b.log_append_time if b.log_append_time >= 0 else self._timestamp
        return RecordMetadata(b.topic, b.partition, offset, ts)

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Block the calling thread until the record is acknowledged; raises its KraftError.
        Never call it from the trio thread that runs the producer (use send_and_wait there)."""
        if not self._wait(timeout):
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT, f"record not acknowledged within {timeout} s"
            )
        return self._metadata()

    def exception(self, timeout: float | None = None) -> KraftError | None:
        if not self._wait(timeout):
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT, f"record not acknowledged within {timeout} s"
            )
        return self._batch.error

    def add_done_callback(self, fn: Callable[[RecordFuture], None]) -> None:
        """`fn(future)` runs once the record is acknowledged or failed, on the producer's
        thread (keep it short), or at once when already done."""
        if self._batch is None:
            with _pending_lock:
                if self._batch is None:  # rare: the record still waits for its topic's metadata
                    self._callbacks = (self._callbacks or []) + [fn]
                    return
        self._batch.on_done(fn, self)

    def _wait(self, timeout: float | None) -> bool:
        if self._batch is None:
            # Waiting for metadata (rare): poll until the sender places the record.
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._batch is None:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                time.sleep(0.001)
            if deadline is not None:
                timeout = max(0.0, deadline - time.monotonic())
        return self._batch.wait(timeout)

    def __repr__(self) -> str:
        if not self.done():
            return "<RecordFuture pending>"
        b = self._batch
        return f"<RecordFuture {b.error!r}>" if b.error else f"<RecordFuture {self._metadata()}>"


class RecordsFuture:
    """The outcome of one `send_batch`: done(), result(timeout) (every record's RecordMetadata,
    in the order sent; raises the first error), exception(), add_done_callback(fn). Holds one
    entry per batch the records went to, [BatchResult, first index, count], not one object per
    record; records that waited for their topic's metadata are RecordFutures."""

    __slots__ = ("_parts", "_timestamp")

    def __init__(self, parts: list, timestamp: int) -> None:
        self._parts = parts
        self._timestamp = timestamp

    def _results(self) -> list:
        return [p if isinstance(p, RecordFuture) else p[0] for p in self._parts]

    def done(self) -> bool:
        return all(r.done() for r in self._results())

    def _wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for r in self._results():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not (r._wait(left) if isinstance(r, RecordFuture) else r.wait(left)):
                return False
        return True

    def result(self, timeout: float | None = None) -> list[RecordMetadata]:
        """Block until every record is acknowledged (never from the producer's trio thread)."""
        if not self._wait(timeout):
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT, f"records not acknowledged within {timeout} s"
            )
        out: list[RecordMetadata] = []
        for p in self._parts:
            if isinstance(p, RecordFuture):
                out.append(p._metadata())
                continue
            b, first, count = p
            if b.error is not None:
                raise b.error
            ts = b.log_append_time if b.log_append_time >= 0 else self._timestamp
            base = b.base_offset + first if b.base_offset >= 0 else -1
            out += [
                RecordMetadata(b.topic, b.partition, base + i if base >= 0 else -1, ts)
                for i in range(count)
            ]
        return out

    def exception(self, timeout: float | None = None) -> KraftError | None:
        if not self._wait(timeout):
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT, f"records not acknowledged within {timeout} s"
            )
        for r in self._results():
            err = r.exception(0) if isinstance(r, RecordFuture) else r.error
            if err is not None:
                return err
        return None

    def add_done_callback(self, fn: Callable[[RecordsFuture], None]) -> None:
        """`fn(self)` once every record is acknowledged or failed (on the producer's thread)."""
        results = self._results()
        left = [len(results)]
        lock = threading.Lock()

        def one_done(*_args) -> None:
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                fn(self)

        if not results:
            _run_callback(lambda: fn(self))
        for r in results:
            if isinstance(r, RecordFuture):
                r.add_done_callback(one_done)
            else:
                r.on_done(one_done)

    def on_delivery(self, fn: Callable[[KraftError | None, RecordMetadata], None]) -> None:
        """confluent-kafka's delivery report: `fn(error, metadata)` once per record, in order
        within each batch, when its batch completes (on the producer's thread; keep it short).
        metadata.offset is -1 on error."""
        ts = self._timestamp
        for p in self._parts:
            if isinstance(p, RecordFuture):
                p.add_done_callback(lambda f: fn(f._batch.error, _metadata_or_failed(f)))
                continue
            b, first, count = p

            def report(b=b, first=first, count=count) -> None:
                t = b.log_append_time if b.log_append_time >= 0 else ts
                base = b.base_offset + first if b.error is None and b.base_offset >= 0 else -1
                for i in range(count):
                    fn(
                        b.error,
                        RecordMetadata(b.topic, b.partition, base + i if base >= 0 else -1, t),
                    )

            b.on_done(report)


def _metadata_or_failed(f: RecordFuture) -> RecordMetadata:
    b = f._batch
    if b.error is None:
        return f._metadata()
    return RecordMetadata(b.topic, b.partition, -1, f._timestamp)


def fail_futures(futures: list, exc: KraftError) -> None:
    """Fail records that never got a batch (they waited for metadata): each future gets a
    failed result of its own."""
    for f in futures:
        result = BatchResult("", -1)
        result.complete(-1, -1, exc)
        f._place(result, 0)
