"""Raft's commit rule (section 5.4.2, Kafka's epoch start offset): a new leader exposes nothing as
committed until a majority holds its own LeaderChange entry, even if a majority already holds
every entry from older epochs."""

import random

from simulation import SIM_CONFIG

from kraft.raft import ElectionState, Entry, MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import FetchRequest, VoteRequest, VoteResponse


def _elected_leader_with_old_entries() -> tuple[RaftCore, MemoryRaftLog]:
    log = MemoryRaftLog()
    log.append([Entry(i, 1, b"old-%d" % i) for i in range(3)])
    log.flush()
    core = RaftCore(
        1,
        frozenset({1, 2, 3}),
        log,
        MemoryElectionStore(ElectionState(1, None, 2)),
        random.Random(7),
        SIM_CONFIG,
        0,
    )
    now = SIM_CONFIG.fetch_timeout_ms + 1
    core.tick(now)  # leader 2 is silent: stand for election (pre-vote first)
    assert core.role == "Prospective"
    core.step(VoteResponse(2, 1, 1, None, True, pre_vote=True), now)
    assert core.role == "Candidate" and core.epoch == 2
    core.step(VoteResponse(2, 1, 2, None, True), now)
    assert core.is_leader
    ready = core.ready()
    assert any(isinstance(m, VoteRequest) for m in ready.messages)
    log.flush()
    core.advance(ready)
    return core, log


def test_old_epoch_entries_on_a_majority_do_not_commit_before_the_epoch_start():
    core, log = _elected_leader_with_old_entries()
    assert log.read(3, 1)[0].control and log.read(3, 1)[0].epoch == 2
    # Follower 2 holds offsets 0..2 (epoch 1): with the leader that is a majority of the old data.
    core.step(FetchRequest(2, 1, 2, fetch_offset=3, last_fetched_epoch=1, request_id=1), 10_000)
    assert core.high_watermark == 0
    # Once it holds the LeaderChange entry too, everything up to it commits at once.
    core.step(FetchRequest(2, 1, 2, fetch_offset=4, last_fetched_epoch=2, request_id=2), 10_001)
    assert core.high_watermark == 4
