"""Brokers observe the metadata log: they fetch it like voters, but never vote, never stand for
election, and never count toward the high watermark."""

import random

from simulation import SIM_CONFIG, Simulation

from kraft.raft import MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import VoteRequest, VoteResponse


def test_observers_never_count_toward_the_high_watermark():
    sim = Simulation(seed=21, voters=3, observers=2)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(300)  # the observers find the leader
    leader = sim.leader()
    for n in sim.nodes.values():
        if n.voter and n is not leader:
            sim.crash(n.node_id)
    hw = leader.core.high_watermark
    _, position = sim.propose(3)
    observers = [n for n in sim.nodes.values() if not n.voter]
    assert sim.run_until(
        lambda: all(o.log.log_end_offset > position.offset for o in observers), 200
    )
    assert not sim.run_until(lambda: leader.core.high_watermark > hw, 1000), (
        "two observers and the leader made a 'majority'"
    )
    for n in sim.nodes.values():
        sim.restart(n.node_id)
    assert sim.run_until(lambda: sim.is_committed(position), 3000)


def test_observers_never_vote_nor_stand_for_election():
    sim = Simulation(seed=22, voters=3, observers=2, record_messages=True)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    for o in (4, 5):
        sim.isolate(o)  # cut off long enough that a voter would have stood for election
    sim.run_for(10 * sim.config.fetch_timeout_ms)
    sim.heal()
    sim.crash(sim.leader().node_id)
    sim.run_for(3000)
    assert not [m for _, m in sim.sent if isinstance(m, VoteRequest) and m.src in (4, 5)]
    assert not [
        m for _, m in sim.sent if isinstance(m, VoteResponse) and m.src in (4, 5) and m.vote_granted
    ]
    assert sim.leader() is not None and sim.leader().node_id in sim.voter_ids


def test_an_observer_refuses_a_vote_request():
    core = RaftCore(
        4,
        frozenset({1, 2, 3}),
        MemoryRaftLog(),
        MemoryElectionStore(),
        random.Random(0),
        SIM_CONFIG,
        0,
        is_observer=True,
    )
    core.step(VoteRequest(1, 4, 1, 0, 0), 0)
    [reply] = [m for m in core.ready().messages if isinstance(m, VoteResponse)]
    assert not reply.vote_granted and core.voted_for is None and core.epoch == 0
