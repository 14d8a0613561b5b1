"""RecordAccumulator's sender side (a mixin, pure as the rest): drain the ready batches per leader
node, free a request's slots, put a failed batch back for its retry, give a batch's memory back."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from clients.producer.producer_batch import BATCH_OVERHEAD, Drained, ProducerBatch


class AccumulatorDrain:
    """RecordAccumulator's sender side; the attributes are RecordAccumulator's (accumulator.py)."""

    # --- the sender's side --------------------------------------------------------------------

    def drain(
        self,
        now_ms: int,
        leader_of: Callable[[tuple], int | None],
        can_send: Callable[[int], bool],
        limit_of: Callable[[tuple], int] | None = None,
        allowed: Callable[[tuple], bool] | None = None,
    ) -> Drained:
        """Take every sendable batch, grouped per leader node, one ProduceRequest each.
        `limit_of(tp)`: that partition's requests-in-flight limit (default max_in_flight);
        `allowed(tp)`: False holds the partition's batches back (reported in `blocked`)."""
        requests: dict[int, list] = {}
        sizes: dict[int, int] = {}
        expired: list = []
        unknown: set = set()
        blocked: set = set()
        next_ms = None
        linger = self.linger_ms
        flushing = self._flushing > 0
        expire_before = now_ms - self.delivery_timeout_ms
        for tp, dq in self._batches.items():
            if not dq:
                continue
            while dq and dq[0].created_ms <= expire_before:
                batch = dq.popleft()
                batch.closed = True
                expired.append(batch)
            if not dq:
                continue
            if allowed is not None and not allowed(tp):
                blocked.add(tp)  # the sender wakes when it is allowed
                continue
            head = dq[0]
            ready_at = (
                head.retry_at_ms
                if head.attempts
                else (
                    now_ms if (len(dq) > 1 or head.closed or flushing) else head.created_ms + linger
                )
            )
            deadline = min(ready_at, head.created_ms + self.delivery_timeout_ms)
            if ready_at > now_ms:
                next_ms = deadline if next_ms is None else min(next_ms, deadline)
                continue
            out = self._in_flight.get(tp, 0)
            if out and (
                out >= (self.max_in_flight if limit_of is None else limit_of(tp))
                or head.attempts
                or not head.closed
            ):
                continue
            node = leader_of(tp)
            if node is None:
                unknown.add(tp[0])
                next_ms = deadline if next_ms is None else min(next_ms, deadline)
                continue
            if not can_send(node):
                continue
            used = sizes.get(node, 0)
            took = False
            while dq:
                batch = dq[0]
                if batch.attempts and batch.retry_at_ms > now_ms:
                    break
                if len(dq) == 1 and not (
                    batch.closed
                    or flushing
                    or batch.attempts
                    or batch.created_ms + linger <= now_ms
                ):
                    next_ms = (
                        batch.created_ms + linger
                        if next_ms is None
                        else min(next_ms, batch.created_ms + linger)
                    )
                    break
                if used and used + batch.size > self.max_request_size:
                    next_ms = now_ms  # more is ready: send it in the next request
                    break
                dq.popleft()
                batch.closed = True
                used += batch.size
                requests.setdefault(node, []).append(batch)
                took = True
                if batch.attempts:
                    break  # a retry goes alone (see the rules in accumulator.py)
            if took:
                sizes[node] = used
                self._in_flight[tp] = self._in_flight.get(tp, 0) + 1
        return Drained(requests, expired, unknown, next_ms, blocked)

    def request_done(self, batches: list) -> None:
        """A ProduceRequest carrying `batches` got its answer (or failed): free its slots."""
        for tp in {(b.topic, b.partition) for b in batches}:
            left = self._in_flight.get(tp, 0) - 1
            if left > 0:
                self._in_flight[tp] = left
            else:
                self._in_flight.pop(tp, None)

    def reenqueue(self, batch: ProducerBatch, now_ms: int, backoff: bool = True) -> None:
        """Put a batch whose attempt failed with a retriable error back at its partition's
        head, in creation order, to be sent again after retry_backoff_ms (without backoff:
        as soon as its partition has no request out)."""
        batch.attempts += 1
        batch.retry_at_ms = now_ms + (self.retry_backoff_ms if backoff else 0)
        tp = (batch.topic, batch.partition)
        dq = self._batches.setdefault(tp, deque())
        i = 0
        while i < len(dq) and dq[i].attempts and dq[i].seq < batch.seq:
            i += 1
        dq.insert(i, batch)

    def expired(self, batch: ProducerBatch, now_ms: int) -> bool:
        return now_ms - batch.created_ms >= self.delivery_timeout_ms

    def finished(self, batch: ProducerBatch) -> None:
        """The batch succeeded or failed for good: give its memory back."""
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self.buffered_bytes -= batch.size - BATCH_OVERHEAD
