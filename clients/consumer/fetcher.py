"""The consumer's I/O side: one prefetching Fetch loop per leader node and lazy offset resets by
ListOffsets. The positions the user's thread moves are in subscription_state.py, the reading of
Fetch answers into the buffer `poll` decodes in fetch_answers.py (mixins of Fetcher)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from functools import partial

import trio

from clients import bridge
from clients._sync import TrioHome
from clients.cluster import Cluster
from clients.consumer.fetch_answers import SMALL_ANSWER_BYTES, ConsumerRecord, FetchAnswers  # noqa: F401  (imported from here by callers)
from clients.consumer.read_committed import isolation_level_of
from clients.consumer.subscription_state import MAX_BUFFERED_CHUNKS, SubscriptionState
from clients.errors import KraftError
from clients.list_offsets import list_offsets, list_offsets_until
from clients.types import LATEST_TIMESTAMP, TopicPartition
from clients.wire import broker_pb2

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


class Fetcher(SubscriptionState, FetchAnswers):
    """State shared by the user's thread (poll, seek) and the trio tasks, under one Condition."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        fetch_min_bytes: int,
        fetch_max_wait_ms: int,
        fetch_max_bytes: int,
        max_partition_fetch_bytes: int,
        auto_offset_reset: str,
        check_crcs: bool,
        request_timeout_ms: int,
        isolation_level: str = "read_uncommitted",
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(
                "auto_offset_reset must be 'earliest', 'latest' or 'none', "
                f"not {auto_offset_reset!r}"
            )
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
        self.positions: dict[tuple, int] = {}  # next offset poll returns
        self.fetch_offsets: dict[tuple, int] = {}  # next offset to fetch (ahead of positions)
        self.resets: dict[tuple, int] = {}  # tp -> ListOffsets timestamp, resolved lazily
        self.gens: dict[tuple, int] = {}  # bumped by every seek: stale answers dropped
        # KIP-320's bound: a leader epoch known to have held the data up to the position (the
        # newest batch fetched, or a committed offset's). A leader with an older epoch is a
        # deposed one its metadata has not caught up with: never fetch from it (its shorter log
        # would answer OFFSET_OUT_OF_RANGE, and a reset would reread or skip).
        self.epochs: dict[tuple, int] = {}
        self.chunks: dict[tuple, int] = {}
        self.paused: set[TopicPartition] = set()  # assigned but neither fetched nor returned
        self.buffer: deque = deque()  # CompletedFetch, oldest first
        self.group_id: str | None = None  # named in errors about missing positions
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
        with self.cond:  # (a partition with no leader known yet is simply unknown)
            stale = [tp for tp in assigned if tp in leaders and self._stale_leader(tp)]
        if stale:
            if set(stale) != self._stale_logged:
                log.info(
                    "the metadata's leaders of %s are older than the data read or "
                    "committed there; asking again",
                    ", ".join(f"{t}-{p}" for t, p in stale),
                )
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
        return await list_offsets_until(
            self.cluster, wanted, timeout_s, RETRY_BACKOFF_S, self.isolation_level
        )

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
        return [
            (tp, self.fetch_offsets[tp], self.gens.get(tp, 0))
            for tp in self.assigned
            if tp in self.fetch_offsets
            and leaders.get(tp) == node
            and chunks.get(tp, 0) < MAX_BUFFERED_CHUNKS
            and tp not in paused
            and not self._stale_leader(tp)
        ]

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
                topics.setdefault(tp[0], []).append(
                    broker_pb2.FetchPartition(
                        partition=tp[1],
                        current_leader_epoch=epoch_of(tp),
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=self.partition_max_bytes,
                    )
                )
            req = broker_pb2.FetchRequest(
                replica_id=-1,
                max_wait_ms=self.max_wait_ms,
                min_bytes=self.min_bytes,
                max_bytes=self.max_bytes,
                isolation_level=self.isolation_level,
                topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            )
            try:
                with trio.CancelScope() as scope:
                    self._fetch_scopes[node] = scope
                    pending = bridge.start(
                        self.cluster.broker_stub(node).Fetch,
                        req,
                        self.timeout,
                        partial(self._take_answer, wanted),
                    )
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
