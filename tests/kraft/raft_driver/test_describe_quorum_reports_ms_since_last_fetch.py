"""DescribeQuorum's last_fetch_ms is an age: ms since the leader last got a fetch from each
replica, on the driver's clock (the core keeps the fetch's time on that monotonic clock, which
means nothing to a reader); the leader's own row is 0 and a replica that never fetched stays None."""

from __future__ import annotations

import random

from kraft.raft import MemoryElectionStore, MemoryRaftLog, RaftConfig, RaftCore
from kraft.raft.driver import RaftDriver
from kraft.raft.messages import FetchRequest, VoteResponse

CONFIG = RaftConfig(
    election_timeout_ms=100, fetch_timeout_ms=2000, request_timeout_ms=500, fetch_max_wait_ms=100
)
# A monotonic clock is large and arbitrary: an answer carrying it would be this big.
START_MS = 7_000_000


class FakeClock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def leader_with_fetches() -> tuple[RaftDriver, FakeClock]:
    """Node 1 leads voters {1, 2, 3}; voter 2 fetched at +1000 ms, observer 4 at +1300 ms,
    voter 3 never."""
    log, store, clock = MemoryRaftLog(), MemoryElectionStore(), FakeClock(START_MS)
    core = RaftCore(1, frozenset({1, 2, 3}), log, store, random.Random(1), CONFIG, clock())
    driver = RaftDriver(core, log, store, {}, clock=clock)
    clock.now_ms += 2 * CONFIG.election_timeout_ms  # past any election deadline
    core.tick(clock())
    core.step(VoteResponse(2, 1, 0, None, vote_granted=True, pre_vote=True), clock())
    core.step(VoteResponse(2, 1, 1, None, vote_granted=True), clock())
    assert core.is_leader and core.epoch == 1
    core.step(
        FetchRequest(2, 1, 1, fetch_offset=0, last_fetched_epoch=0, request_id=1), START_MS + 1000
    )
    core.step(
        FetchRequest(4, 1, 1, fetch_offset=0, last_fetched_epoch=0, request_id=1), START_MS + 1300
    )
    return driver, clock


def test_last_fetch_is_reported_as_ms_since_that_fetch():
    driver, clock = leader_with_fetches()
    clock.now_ms = START_MS + 1500

    info = driver.describe()

    ages = {r.replica_id: r.last_fetch_ms for r in info.voters}
    assert ages == {1: 0, 2: 500, 3: None}
    assert [(r.replica_id, r.last_fetch_ms) for r in info.observers] == [(4, 200)]


def test_the_age_grows_with_the_driver_clock_not_with_the_core_steps():
    driver, clock = leader_with_fetches()
    clock.now_ms = START_MS + 4000  # nothing stepped since: the core's time stands still

    ages = {r.replica_id: r.last_fetch_ms for r in driver.describe().voters}

    assert ages[2] == 3000


def test_the_core_itself_still_keeps_clock_times():
    # Only the answer turns them into ages: check-quorum and the like keep comparing times.
    driver, clock = leader_with_fetches()
    clock.now_ms = START_MS + 1500

    assert {r.replica_id: r.last_fetch_ms for r in driver.core.describe().voters}[
        2
    ] == START_MS + 1000
