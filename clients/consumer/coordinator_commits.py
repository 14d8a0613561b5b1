"""ConsumerCoordinator's offset commits (a mixin): commit and commit_async with the member's
generation, auto-commit of what poll reached, and committed offsets read back."""

from __future__ import annotations

import logging

from clients.consumer.clock import now_ms
from clients.errors import ErrorCode, KraftError
from clients.group_rpc import deadline_after
from clients.types import TopicPartition

# The coordinator's logger: these warnings went out under its name before this file split off.
log = logging.getLogger("clients.consumer.coordinator")
E = ErrorCode
MEMBERSHIP_ERRORS = frozenset(
    {E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS, E.FENCED_INSTANCE_ID}
)


class CoordinatorCommits:
    """ConsumerCoordinator's commits; the attributes (core, fetcher, rpc, _commit_lock, ...) are
    its own (coordinator.py)."""

    # -- commits ------------------------------------------------------------------------------
    def consumed_locked(self, partitions=None) -> dict[TopicPartition, int]:
        """The positions poll has reached (of `partitions`, or every assigned one)."""
        f = self.fetcher
        wanted = f.assigned if partitions is None else partitions
        return {tp: f.positions[tp] for tp in wanted if tp in f.positions}

    async def commit(self, offsets: dict, timeout_s: float | None = None) -> None:
        offsets = {TopicPartition(*tp): int(o) for tp, o in offsets.items()}
        if not offsets:
            return
        async with self._commit_lock:
            identity = self.core.commit_identity()
            if identity is None:
                raise KraftError(
                    E.REBALANCE_IN_PROGRESS,
                    f"group '{self.group_id}' is "
                    "rebalancing, so nothing was committed (its partitions may be "
                    "someone else's by now); poll() to finish the rebalance",
                )
            with self.fetcher.cond:
                epochs = self.fetcher.epochs_at_locked(offsets)
            try:
                await self.rpc.commit_offsets(
                    offsets, *identity, deadline_after(timeout_s or self.timeout_s), epochs
                )
            except KraftError as exc:
                if exc.code not in MEMBERSHIP_ERRORS or identity[0] < 0:
                    raise
                self._apply(self.core.on_commit_error(exc.code, now_ms()))
                raise KraftError(
                    exc.code,
                    f"commit failed: group '{self.group_id}' has "
                    "rebalanced and these partitions may belong to another member "
                    "now, which will read again from the last committed offsets "
                    f"(Kafka's CommitFailedException; {exc.message})",
                ) from None
            for tp, o in offsets.items():
                self._committed[tp] = o

    def commit_async(self, offsets: dict, callback=None) -> None:
        """Any thread: commit in the background; the outcome goes to `commits_done` for the
        user's next poll (where Kafka runs commit callbacks)."""

        async def run() -> None:
            error = None
            try:
                await self.commit(offsets)
            except KraftError as exc:
                error = exc
                if callback is None:
                    log.warning("group %s: async commit failed: %s", self.group_id, exc)
            if callback is not None:
                self.commits_done.append((callback, offsets, error))

        self.fetcher.home.call_soon(self._nursery.start_soon, run)

    async def _auto_commit(self) -> None:
        if self._commit_lock.locked():
            return
        with self.fetcher.cond:
            offsets = {
                tp: o for tp, o in self.consumed_locked().items() if self._committed.get(tp) != o
            }
        if not offsets or self.core.commit_identity() is None:
            return
        try:
            await self.commit(offsets)
        except KraftError as exc:
            log.warning("group %s: auto-commit failed: %s", self.group_id, exc)

    async def committed(
        self, partitions, timeout_s: float | None = None
    ) -> dict[TopicPartition, int | None]:
        tps = [TopicPartition(*tp) for tp in partitions]
        got = await self.rpc.fetch_offsets(
            tps, deadline_after(timeout_s or self.timeout_s), require_stable=self.require_stable
        )
        return {tp: got.get(tp) for tp in tps}
