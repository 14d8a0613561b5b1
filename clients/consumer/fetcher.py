"""The consumer's I/O side: positions per assigned partition, one prefetching Fetch loop per
leader node, lazy offset resets by ListOffsets, and the buffer of fetched batches `poll` decodes
and reads."""
from __future__ import annotations

import logging
import threading
from collections import deque
from functools import partial
from typing import NamedTuple

import trio

from clients import bridge
from clients._sync import TrioHome
from clients.cluster import Cluster
from clients.list_offsets import list_offsets, list_offsets_until
from clients.errors import INVALID_METADATA, ErrorCode, KraftError
from clients.consumer.completed_fetch import CompletedFetch, batch_span
from clients.consumer.read_committed import drop_aborted, isolation_level_of
from clients.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from clients.wire import broker_pb2

log = logging.getLogger(__name__)

# Chunks (one fetch answer per partition) buffered before a partition stops being fetched:
# one the user is reading plus one that arrived meanwhile keeps a fetch always in flight.
MAX_BUFFERED_CHUNKS = 2
RETRY_BACKOFF_S = 0.1
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


class Fetcher:
    """State shared by the user's thread (poll, seek) and the trio tasks, under one Condition."""

    def __init__(self, cluster: Cluster, *, fetch_min_bytes: int, fetch_max_wait_ms: int,
                 fetch_max_bytes: int, max_partition_fetch_bytes: int, auto_offset_reset: str,
                 check_crcs: bool, request_timeout_ms: int,
                 isolation_level: str = "read_uncommitted") -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError("auto_offset_reset must be 'earliest', 'latest' or 'none', "
                             f"not {auto_offset_reset!r}")
        self.cluster = cluster
        self.min_bytes = fetch_min_bytes
        self.max_wait_ms = fetch_max_wait_ms
        self.max_bytes = fetch_max_bytes
        self.partition_max_bytes = max_partition_fetch_bytes
        self.reset_policy = auto_offset_reset
        self.check_crcs = check_crcs
        self.isolation_level = isolation_level_of(isolation_level)
        self.timeout = (request_timeout_ms + fetch_max_wait_ms) / 1000
        self.cond = threading.Condition(threading.Lock())
        self.assigned: list[TopicPartition] = []
        self.positions: dict[tuple, int] = {}       # next offset poll returns
        self.fetch_offsets: dict[tuple, int] = {}   # next offset to fetch (ahead of positions)
        self.resets: dict[tuple, int] = {}          # tp -> ListOffsets timestamp, resolved lazily
        self.gens: dict[tuple, int] = {}            # bumped by every seek: stale answers dropped
        # KIP-320's bound: a leader epoch known to have held the data up to the position (the
        # newest batch fetched, or a committed offset's). A leader with an older epoch is a
        # deposed one its metadata has not caught up with: never fetch from it (its shorter log
        # would answer OFFSET_OUT_OF_RANGE, and a reset would reread or skip).
        self.epochs: dict[tuple, int] = {}
        self.chunks: dict[tuple, int] = {}
        self.paused: set[TopicPartition] = set()    # assigned but neither fetched nor returned
        self.buffer: deque = deque()                # CompletedFetch, oldest first
        self.group_id: str | None = None            # named in errors about missing positions
        self.error: KraftError | None = None
        self.wake_requested = False
        self.refetch = False
        self._fetch_scopes: dict[int, trio.CancelScope] = {}
        self._changed = trio.Event()
        self._data = trio.Event()
        self._metadata_wanted = True
        self._stale_logged: set = set()
        self._nodes: set[int] = set()
        self._nursery: trio.Nursery | None = None
        self.home = TrioHome()

    def wake(self) -> None:
        """Any thread: fetch loops and the manager look at the state again (one wake-up in
        flight at a time from other threads)."""
        if self.home.is_home():
            self._wake()
        elif not self.wake_requested:
            self.wake_requested = True
            self.home.call_soon(self._wake)

    def _wake(self) -> None:
        """Trio thread. After a seek or assign, long-polling fetches are cancelled so the new
        positions go out now."""
        self.wake_requested = False
        if self.refetch:
            self.refetch = False
            for scope in self._fetch_scopes.values():
                scope.cancel()
        ev, self._changed = self._changed, trio.Event()
        ev.set()

    # --- the user's side (called with self.cond held) ---------------------------------------

    def assign_locked(self, partitions) -> None:
        self.refetch = True
        new = [TopicPartition(*tp) for tp in dict.fromkeys(partitions)]
        keep = set(new)
        for tp in self.assigned:
            if tp not in keep:
                self._forget_locked(tp)
        for tp in new:
            if tp not in self.positions and tp not in self.resets:
                self._reset_locked(tp, self._policy_timestamp(tp))
        self.assigned = new

    def _policy_timestamp(self, tp) -> int | None:
        if self.reset_policy == "earliest":
            return EARLIEST_TIMESTAMP
        if self.reset_policy == "latest":
            return LATEST_TIMESTAMP
        return None

    def _forget_locked(self, tp) -> None:
        self._drop_chunks_locked(tp)
        for d in (self.positions, self.fetch_offsets, self.resets, self.chunks, self.epochs):
            d.pop(tp, None)
        self.paused.discard(tp)
        self.gens[tp] = self.gens.get(tp, 0) + 1

    def pause_locked(self, tps) -> None:
        """Stop fetching `tps` and drop what is buffered for them (Kafka drops it too): their
        positions stay where poll left them, so resume reads on from there."""
        self.refetch = True
        for tp in tps:
            tp = TopicPartition(*tp)
            self._check_assigned(tp)
            if tp in self.paused:
                continue
            self.paused.add(tp)
            self._drop_chunks_locked(tp)
            if tp in self.positions:
                self.fetch_offsets[tp] = self.positions[tp]
            self.gens[tp] = self.gens.get(tp, 0) + 1

    def resume_locked(self, tps) -> None:
        for tp in tps:
            tp = TopicPartition(*tp)
            self._check_assigned(tp)
            self.paused.discard(tp)

    def notify_locked(self) -> None:
        """Wake every poller (blocking and async) so it looks again: the group has callbacks for
        it to run or an error to raise."""
        self._notify_data()

    def _drop_chunks_locked(self, tp) -> None:
        if self.chunks.get(tp):
            self.buffer = deque(c for c in self.buffer if c.tp != tp)
            self.chunks[tp] = 0

    def seek_locked(self, tp, offset: int, leader_epoch: int = -1) -> None:
        """`leader_epoch`: one known to hold the data before `offset` (a committed offset's),
        -1 if none is known."""
        self.refetch = True
        self._check_assigned(tp)
        self._drop_chunks_locked(tp)
        self.resets.pop(tp, None)
        self.positions[tp] = self.fetch_offsets[tp] = offset
        self.gens[tp] = self.gens.get(tp, 0) + 1
        if leader_epoch >= 0:
            self.epochs[tp] = leader_epoch
        else:
            self.epochs.pop(tp, None)

    def epochs_at_locked(self, offsets: dict) -> dict:
        """For a commit: the leader epoch bound of each partition committed at its position
        (what poll returned); an offset chosen elsewhere gets none."""
        return {tp: self.epochs[tp] for tp, o in offsets.items()
                if tp in self.epochs and self.positions.get(tp) == o}

    def _reset_locked(self, tp, timestamp: int | None) -> None:
        self._drop_chunks_locked(tp)
        self.positions.pop(tp, None)
        self.fetch_offsets.pop(tp, None)
        self.epochs.pop(tp, None)
        self.gens[tp] = self.gens.get(tp, 0) + 1
        if timestamp is None:
            self.resets.pop(tp, None)
        else:
            self.resets[tp] = timestamp

    def reset_locked(self, tp, timestamp: int) -> None:
        self.refetch = True
        self._check_assigned(tp)
        self._reset_locked(tp, timestamp)

    def _check_assigned(self, tp) -> None:
        if tp not in self.assigned:
            raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"{tp[0]}-{tp[1]} is not assigned to this consumer; assign() it first")

    def take_locked(self, max_records: int) -> tuple[list, bool]:
        """Up to max_records buffered records, advancing positions; returns (records, wake):
        wake when a chunk was used up that had stopped its partition's fetching."""
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        buffer = self.buffer
        if not buffer and self.reset_policy == "none":
            for tp in self.assigned:
                if tp not in self.positions and tp not in self.resets:
                    group = (f"no offset committed in group '{self.group_id}' and "
                             if self.group_id else "")
                    raise KraftError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                     f"{tp[0]}-{tp[1]} has {group}no position and "
                                     f"auto_offset_reset='none'; seek() or seek_to_beginning() "
                                     "first")
        out: list = []
        wake = False
        while buffer and len(out) < max_records:
            chunk = buffer[0]
            tp = chunk.tp
            try:
                part = chunk.take(max_records - len(out))
            except ValueError as exc:
                # A batch that does not decode: a seek to where the partition stands (the
                # record after the last one returned) drops its later chunks and the fetch in
                # flight and fetches the bad batch again, so each poll says so until the user
                # seeks past it (Kafka's consumer stops at a corrupt record the same way).
                error = KraftError(ErrorCode.CORRUPT_MESSAGE, f"{tp[0]}-{tp[1]}: {exc}")
                self.seek_locked(tp, self.positions.setdefault(tp, chunk.skip_below),
                                 self.epochs.get(tp, -1))
                if out:
                    self.error = error      # raised by the next poll: these records go now
                    return out, True
                self.wake()                 # takes no lock: safe under self.cond
                raise error from None
            if part:
                out += part
                self.positions[tp] = part[-1].offset + 1
            if chunk.done:
                buffer.popleft()
                left = self.chunks[tp] = self.chunks[tp] - 1
                self.positions[tp] = chunk.next_offset
                # Only a partition at its chunk limit waits for room to be fetched again; below
                # it its fetch is in flight already, and a wake would cost the poller a hop.
                wake = wake or left == MAX_BUFFERED_CHUNKS - 1
        return out, wake

    # --- trio side --------------------------------------------------------------------------

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self.home.settle()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                changed = self._changed
                retry = await self._manage()
                if retry:
                    with trio.move_on_after(RETRY_BACKOFF_S):
                        await changed.wait()
                else:
                    await changed.wait()

    async def wait_for_data(self, timeout_s: float) -> None:
        with trio.move_on_after(timeout_s):
            await self._data.wait()

    def _notify_data(self) -> None:
        """Called with cond held after buffering: wake blocking pollers and async pollers."""
        self.cond.notify_all()
        ev, self._data = self._data, trio.Event()
        ev.set()

    async def _manage(self) -> bool:
        """Refresh metadata, resolve resets, start node loops; True if something must be
        retried after a backoff."""
        with self.cond:
            assigned = list(self.assigned)
            has_resets = bool(self.resets)
        leaders = self.cluster.metadata.leaders
        retry = False
        with self.cond:     # (a partition with no leader known yet is simply unknown)
            stale = [tp for tp in assigned if tp in leaders and self._stale_leader(tp)]
        if stale:
            if set(stale) != self._stale_logged:
                log.info("the metadata's leaders of %s are older than the data read or "
                         "committed there; asking again", ", ".join(f"{t}-{p}" for t, p in stale))
            self._metadata_wanted = retry = True
        self._stale_logged = set(stale)
        if assigned and (self._metadata_wanted or any(tp not in leaders for tp in assigned)):
            try:
                await self.cluster.refresh(sorted({tp[0] for tp in assigned}))
                self._metadata_wanted = False
                self.wake()  # node loops waiting for a leader look again
            except KraftError as exc:
                log.debug("consumer metadata refresh failed: %s", exc)
                return True
            if any(tp not in leaders for tp in assigned):
                retry = True
        if has_resets:
            try:
                await self.resolve()
            except KraftError as exc:
                if not exc.retriable:
                    with self.cond:
                        self.error = exc
                        self._notify_data()
                retry = True
        for tp in assigned:
            node = leaders.get(tp)
            if node is not None and node not in self._nodes:
                self._nodes.add(node)
                self._nursery.start_soon(self._node_loop, node)
        return retry

    async def list_offsets(self, wanted: dict) -> dict:
        """{tp: timestamp} -> {tp: (offset, timestamp)} asking each partition's leader."""
        return await list_offsets(self.cluster, wanted, self.isolation_level)

    async def list_offsets_until(self, wanted: dict, timeout_s: float) -> dict:
        """`list_offsets` for the user's calls: retried through a leader change."""
        return await list_offsets_until(self.cluster, wanted, timeout_s, RETRY_BACKOFF_S,
                                        self.isolation_level)

    async def resolve(self, only=None) -> None:
        """Turn pending resets (of the partitions in `only`, or all) into positions, unless a
        seek overtook them meanwhile. The resets and their generations are read together: an
        answer for an older reset must never pass for the newer one."""
        with self.cond:
            resets = {tp: ts for tp, ts in self.resets.items() if only is None or tp in only}
            gens = {tp: self.gens.get(tp, 0) for tp in resets}
        if not resets:
            return
        answers = await self.list_offsets(resets)
        with self.cond:
            for tp, (offset, _ts) in answers.items():
                if self.gens.get(tp, 0) != gens[tp] or tp not in self.resets:
                    continue
                if offset < 0:  # no record at or after that timestamp: the end of the log
                    continue
                del self.resets[tp]
                self.positions[tp] = self.fetch_offsets[tp] = offset
            missing = [tp for tp, (o, _) in answers.items() if o < 0 and tp in self.resets]
        if missing:
            ends = await self.list_offsets({tp: LATEST_TIMESTAMP for tp in missing})
            with self.cond:
                for tp, (offset, _ts) in ends.items():
                    if self.gens.get(tp, 0) == gens[tp] and tp in self.resets:
                        del self.resets[tp]
                        self.positions[tp] = self.fetch_offsets[tp] = offset
        self.wake()

    def _fetchable_locked(self, node: int) -> list:
        leaders = self.cluster.metadata.leaders
        chunks = self.chunks
        paused = self.paused
        return [(tp, self.fetch_offsets[tp], self.gens.get(tp, 0)) for tp in self.assigned
                if tp in self.fetch_offsets and leaders.get(tp) == node
                and chunks.get(tp, 0) < MAX_BUFFERED_CHUNKS and tp not in paused
                and not self._stale_leader(tp)]

    def _stale_leader(self, tp) -> bool:
        """The metadata names a leader older than data this consumer already knows of."""
        known = self.epochs.get(tp, -1)
        return known >= 0 and self.cluster.metadata.leader_epoch(tp) < known

    async def _node_loop(self, node: int) -> None:
        """Keep one Fetch in flight to `node` for its fetchable partitions."""
        while True:
            changed = self._changed
            with self.cond:
                wanted = self._fetchable_locked(node)
            if not wanted:
                await changed.wait()
                continue
            topics: dict[str, list] = {}
            epoch_of = self.cluster.metadata.leader_epoch
            for tp, offset, _gen in wanted:
                topics.setdefault(tp[0], []).append(broker_pb2.FetchPartition(
                    partition=tp[1], current_leader_epoch=epoch_of(tp), fetch_offset=offset,
                    last_fetched_epoch=-1, log_start_offset=-1,
                    partition_max_bytes=self.partition_max_bytes))
            req = broker_pb2.FetchRequest(
                replica_id=-1, max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes,
                max_bytes=self.max_bytes, isolation_level=self.isolation_level,
                topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])
            try:
                with trio.CancelScope() as scope:
                    self._fetch_scopes[node] = scope
                    pending = bridge.start(self.cluster.broker_stub(node).Fetch, req,
                                           self.timeout, partial(self._take_answer, wanted))
                    resp = await bridge.finish(pending)
                del self._fetch_scopes[node]
                if scope.cancelled_caught:
                    # Positions changed: ask again (an answer buffered meanwhile in grpc's
                    # thread passed the generation check, so it is still good).
                    self._data_taken_elsewhere(bool(pending.taken))
                    continue
                if resp.error_code:
                    raise KraftError(resp.error_code, resp.error_message)
            except KraftError as exc:
                log.debug("fetch from node %s failed: %s", node, exc)
                for tp, _o, _g in wanted:
                    self.cluster.metadata.invalidate_leader(tp)
                self._metadata_wanted = True
                self.wake()
                await trio.sleep(RETRY_BACKOFF_S)
                continue
            if pending.taken is None:
                await self._handle_fetch(wanted, resp)
            else:
                self._data_taken_elsewhere(pending.taken)

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
                        data = drop_aborted(data, [(a.producer_id, a.first_offset)
                                                   for a in p.aborted_transactions])
                        _n, _e, end, has_records = batch_span(data, offset)
                except ValueError as exc:
                    # A batch header that does not parse (bad magic or length): the partition
                    # stays where it is and poll raises CORRUPT_MESSAGE, as for a bad batch.
                    results.append((tp, gen, ErrorCode.CORRUPT_MESSAGE, str(exc), None, 0, -1))
                    continue
                # Decoded by poll, a few batches at a time (completed_fetch.py says why).
                chunk = CompletedFetch(tp, data, end, offset, next_offset,
                                       record_type=ConsumerRecord,
                                       verify_crc=self.check_crcs) if has_records else None
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
                log.info("fetch offset %d of %s-%d is out of range (%s); resetting to %s",
                         asked[tp][0], tp[0], tp[1], message, self.reset_policy)
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
