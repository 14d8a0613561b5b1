"""Ready carries what must be durable before its messages leave: a vote grant comes with the new
quorum-state and a flush; a restarted leader never resumes its epoch; describe() reports replicas."""

import random

from simulation import SIM_CONFIG, Simulation

from kraft.raft import ElectionState, Entry, MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import FetchRequest, VoteRequest, VoteResponse


def test_a_vote_grant_is_persisted_and_flushed_before_it_is_sent():
    log = MemoryRaftLog()
    log.append([Entry(0, 1, b"unflushed")])
    core = RaftCore(
        2,
        frozenset({1, 2, 3}),
        log,
        MemoryElectionStore(ElectionState(1)),
        random.Random(0),
        SIM_CONFIG,
        0,
    )
    core.step(VoteRequest(1, 2, epoch=2, last_epoch=1, last_offset=1), 5)
    ready = core.ready()
    [reply] = ready.messages
    assert isinstance(reply, VoteResponse) and reply.vote_granted
    assert ready.election_state == ElectionState(2, voted_for=1, leader_id=None)
    assert ready.must_flush
    core.advance(ready)
    core.step(VoteRequest(3, 2, epoch=2, last_epoch=1, last_offset=1), 6)
    [second] = core.ready().messages
    assert not second.vote_granted  # one vote per epoch


def test_a_restarted_leader_resigns_instead_of_resuming_its_epoch():
    store = MemoryElectionStore(ElectionState(4, voted_for=1, leader_id=1))
    core = RaftCore(
        1, frozenset({1, 2, 3}), MemoryRaftLog(), store, random.Random(0), SIM_CONFIG, 0
    )
    assert core.role == "Resigned" and not core.is_leader and core.epoch == 4
    core.step(FetchRequest(2, 1, 4, 0, 0, request_id=1), 1)
    [reply] = core.ready().messages
    assert reply.error.name == "NOT_LEADER_OR_FOLLOWER" and reply.leader_id is None


def test_describe_reports_leader_high_watermark_voters_and_observers():
    sim = Simulation(seed=2, voters=3, observers=2)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    _, position = sim.propose(2)
    assert sim.run_until(lambda: sim.is_committed(position), 1000)
    sim.run_for(300)
    info = sim.leader().core.describe()
    assert info.leader_id == sim.leader().node_id and info.high_watermark == position.offset + 1
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    assert sorted(o.replica_id for o in info.observers) == [4, 5]
    assert all(v.log_end_offset == position.offset + 1 and v.last_fetch_ms for v in info.voters)
