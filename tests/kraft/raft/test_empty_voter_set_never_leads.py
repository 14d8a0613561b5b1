"""An unformatted node (no voter set, empty log, no quorum-state) must never make itself leader;
neither may a lone voter of a larger quorum."""

import random

from simulation import SIM_CONFIG

from kraft.raft import MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import VoteRequest


def _tick_for(core: RaftCore, log: MemoryRaftLog, ms: int) -> list:
    """A driver with no network: persist, 'send' into a list, advance."""
    sent, now = [], 0
    while now < ms:
        core.tick(now)
        while core.has_ready():
            ready = core.ready()
            if ready.must_flush:
                log.flush()
            sent.extend(ready.messages)
            core.advance(ready)
        deadline = core.next_deadline_ms
        now = max(now + 1, deadline if deadline is not None else now + 100)
    return sent


def test_a_node_with_an_empty_voter_set_never_becomes_leader():
    log = MemoryRaftLog()
    core = RaftCore(1, frozenset(), log, MemoryElectionStore(), random.Random(1), SIM_CONFIG, 0)
    sent = _tick_for(core, log, 20_000)
    assert not core.is_leader and core.epoch == 0
    assert not [m for m in sent if isinstance(m, VoteRequest)]


def test_a_lone_voter_of_three_never_becomes_leader():
    log = MemoryRaftLog()
    core = RaftCore(
        1, frozenset({1, 2, 3}), log, MemoryElectionStore(), random.Random(1), SIM_CONFIG, 0
    )
    _tick_for(core, log, 20_000)
    assert not core.is_leader and core.epoch == 0  # pre-vote never won, so no epoch was spent


def test_a_single_voter_quorum_elects_itself_and_commits():
    log = MemoryRaftLog()
    core = RaftCore(1, frozenset({1}), log, MemoryElectionStore(), random.Random(1), SIM_CONFIG, 0)
    _tick_for(core, log, 1000)
    assert core.is_leader and core.epoch == 1
    assert core.high_watermark == 1  # its LeaderChange entry
    core.propose([b"a"], 1000)
    ready = core.ready()
    assert ready.must_flush and core.high_watermark == 1  # not before the leader's own fsync
    log.flush()
    core.advance(ready)
    assert core.high_watermark == 2
    assert [e.payload for e in core.ready().committed] == [b"a"]
