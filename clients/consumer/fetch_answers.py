"""Fetch answers into the consumer's buffer, the part of Fetcher (a mixin) that reads an answer
(in grpc's thread for a small one, else in trio's) and buffers its CompletedFetches for poll."""

from __future__ import annotations

import logging
from typing import NamedTuple

import trio

from clients.consumer.completed_fetch import CompletedFetch, batch_span
from clients.consumer.read_committed import drop_aborted
from clients.errors import INVALID_METADATA, ErrorCode, KraftError
from clients.types import TopicPartition

# The Fetcher's logger: the consumer's fetch messages stay under one name.
log = logging.getLogger("clients.consumer.fetcher")

# Fetch answers up to this many bytes of records are buffered in grpc's thread (_take_answer).
SMALL_ANSWER_BYTES = 64 * 1024


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


class FetchAnswers:
    """Fetcher's answer side; the attributes are Fetcher's (fetcher.py)."""

    def _read_answer(self, wanted: list, resp) -> tuple[dict, list, bool]:
        """Any thread, no state touched: (asked, one result per partition answered, whether
        the metadata must be refreshed)."""
        asked = {tp: (offset, gen) for tp, offset, gen in wanted}
        results = []
        refresh = False
        for t in resp.topics:
            topic = t.topic
            for p in t.partitions:
                tp = TopicPartition(topic, p.partition)
                if tp not in asked:
                    continue
                offset, gen = asked[tp]
                if p.error_code:
                    results.append((tp, gen, p.error_code, p.error_message, None, 0, -1))
                    refresh = refresh or p.error_code in INVALID_METADATA
                    continue
                data = p.records
                if not data:
                    continue
                try:
                    next_offset, epoch, end, has_records = batch_span(data, offset)
                    if next_offset <= offset:
                        continue  # only a partial batch: a bigger partition_max_bytes is needed
                    if p.aborted_transactions:
                        # Positions still move past the dropped batches (next_offset above).
                        data = drop_aborted(
                            data, [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
                        )
                        _n, _e, end, has_records = batch_span(data, offset)
                except ValueError as exc:
                    # A batch header that does not parse (bad magic or length): the partition
                    # stays where it is and poll raises CORRUPT_MESSAGE, as for a bad batch.
                    results.append((tp, gen, ErrorCode.CORRUPT_MESSAGE, str(exc), None, 0, -1))
                    continue
                # Decoded by poll, a few batches at a time (completed_fetch.py says why).
                chunk = (
                    CompletedFetch(
                        tp,
                        data,
                        end,
                        offset,
                        next_offset,
                        record_type=ConsumerRecord,
                        verify_crc=self.check_crcs,
                    )
                    if has_records
                    else None
                )
                results.append((tp, gen, 0, "", chunk, next_offset, epoch))
        return asked, results, refresh

    def _take_answer(self, wanted: list, resp) -> bool | None:
        """grpcio's callback thread (bridge.start's hook): an answer without errors is buffered
        and the blocking poller woken here, not after a hop through the trio thread. Returns
        whether records were buffered, or None for an answer the trio side must handle (it
        reads it again: errors are rare). Safe here: everything it changes is under cond.

        Only a small answer (a consumer that keeps up, where the hop is the latency): a large
        one goes the trio way, which issues the next fetch before the poller starts decoding
        (taking every answer here let the poller hold the GIL while the next fetch waited:
        bench consume 0.8x)."""
        if resp.error_code or _records_bytes(resp) > SMALL_ANSWER_BYTES:
            return None
        asked, results, _refresh = self._read_answer(wanted, resp)
        if any(r[2] for r in results):
            return None
        with self.cond:
            got, _wake = self._buffer_locked(asked, results)
            if got:
                self.cond.notify_all()  # the trio Event for async pollers is set in trio
        return got

    def _data_taken_elsewhere(self, got: bool) -> None:
        """Trio thread, after `_take_answer` buffered an answer: wake async pollers too."""
        if got:
            ev, self._data = self._data, trio.Event()
            ev.set()

    async def _handle_fetch(self, wanted: list, resp) -> None:
        asked, results, refresh = self._read_answer(wanted, resp)
        if refresh:
            self._metadata_wanted = True
        with self.cond:
            got, wake = self._buffer_locked(asked, results)
            if got:
                self._notify_data()
        if wake or refresh:
            self.wake()

    def _buffer_locked(self, asked: dict, results: list) -> tuple[bool, bool]:
        """Apply one answer's results: (records or an error buffered for poll, a wake needed)."""
        got = wake = False
        for tp, gen, code, message, chunk, next_offset, epoch in results:
            if self.gens.get(tp, 0) != gen:
                continue  # a seek or reset happened while the fetch was out
            if self.fetch_offsets.get(tp) != asked[tp][0]:
                # Another fetch (to the partition's new leader, while this one hung on the
                # old) already moved past this offset: these records are buffered already.
                continue
            if code == ErrorCode.OFFSET_OUT_OF_RANGE and self.reset_policy != "none":
                log.info(
                    "fetch offset %d of %s-%d is out of range (%s); resetting to %s",
                    asked[tp][0],
                    tp[0],
                    tp[1],
                    message,
                    self.reset_policy,
                )
                self._reset_locked(tp, self._policy_timestamp(tp))
                wake = True
            elif code in INVALID_METADATA:
                self.cluster.metadata.invalidate_leader(tp)
            elif code:
                self.error = KraftError(code, f"{tp[0]}-{tp[1]}: {message}")
                got = True
            else:
                self.fetch_offsets[tp] = next_offset
                if epoch > self.epochs.get(tp, -1):
                    self.epochs[tp] = epoch
                if chunk is not None:
                    self.buffer.append(chunk)
                    self.chunks[tp] = self.chunks.get(tp, 0) + 1
                    got = True
                elif tp in self.positions and not self.chunks.get(tp):
                    self.positions[tp] = next_offset  # only control records: skip them
        return got, wake


def _records_bytes(resp) -> int:
    return sum(len(p.records) for t in resp.topics for p in t.partitions)
