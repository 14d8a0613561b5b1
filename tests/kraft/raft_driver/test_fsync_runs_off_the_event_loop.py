"""The driver fsyncs in a worker thread: other tasks of the node keep running during a slow flush,
yet nothing touches the log or the core until the flush is done, and no entry is applied before
it is durable."""

from __future__ import annotations

import random
import threading
import time

import trio

from kraft.raft import MemoryElectionStore, MemoryRaftLog, RaftConfig, RaftCore
from kraft.raft.driver import RaftDriver, monotonic_ms

FLUSH_S = 0.15


class SlowLog(MemoryRaftLog):
    """A log whose fsync takes FLUSH_S and which refuses any change while one runs."""

    def __init__(self) -> None:
        super().__init__()
        self.flushing = False
        self.flush_threads: set[int] = set()

    def flush(self) -> None:
        self.flushing = True
        self.flush_threads.add(threading.get_ident())
        time.sleep(FLUSH_S)
        super().flush()
        self.flushing = False

    def append(self, entries) -> None:
        assert not self.flushing, "the log changed during a flush"
        super().append(entries)


async def test_a_slow_flush_blocks_neither_other_tasks_nor_ordering():
    log = SlowLog()
    core = RaftCore(
        1,
        frozenset({1}),
        log,
        MemoryElectionStore(),
        random.Random(1),
        RaftConfig(),
        monotonic_ms(),
    )
    applied = []

    def on_commit(entries):
        assert all(e.offset < log.flushed_offset for e in entries), "applied before durable"
        applied.extend(e.payload for e in entries if not e.control)

    driver = RaftDriver(core, log, MemoryElectionStore(), {}, on_commit=on_commit)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await trio.sleep(0.01)
            ticks += 1

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await nursery.start(driver.run)
            while not driver.is_leader:  # its LeaderChange entry went through a flush
                await driver.wait_leader_change()
            assert ticks >= 5, "the event loop stood still during the flush"
            assert threading.get_ident() not in log.flush_threads

            # Proposals made while a flush runs wait for it, then commit in order.
            async def propose(payload: bytes) -> None:
                await driver.wait_committed(await driver.propose([payload]))

            async with trio.open_nursery() as proposers:
                for i in range(4):
                    proposers.start_soon(propose, b"p%d" % i)
                    await trio.sleep(FLUSH_S / 3)
            assert sorted(applied) == [b"p0", b"p1", b"p2", b"p3"]
            nursery.cancel_scope.cancel()
