"""One forged request with a voter's id can no longer end a quorum: an epoch at the end of int32
or far ahead is refused and nothing is persisted, a healthy follower ignores announcements of
newer epochs while its leader answers, and a node at the last epochs waits instead of crashing.
A node honestly far behind still catches up, from the answers to its own requests."""

import random

from forged_requests import deliver, settled, state
from simulation import SIM_CONFIG, Simulation

from clients.errors import ErrorCode
from kraft.raft import ElectionState, MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, VoteRequest
from kraft.raft.validation import MAX_EPOCH


def _leader_and_follower(sim: Simulation):
    leader = sim.leader()
    follower = next(n for n in sim.nodes.values() if n.voter and n is not leader)
    return leader, follower


def test_begin_quorum_epoch_at_the_end_of_int32_is_refused_and_nothing_persisted():
    sim = settled()
    leader, follower = _leader_and_follower(sim)
    for node in (leader, follower):
        before = state(node)
        answer = deliver(
            sim,
            node,
            BeginQuorumEpochRequest(
                follower.node_id if node is leader else leader.node_id, node.node_id, MAX_EPOCH
            ),
        )
        assert answer.error == ErrorCode.INVALID_REQUEST
        assert f"epoch {MAX_EPOCH}" in answer.error_message
        assert state(node) == before  # store writes included: nothing persisted
    sim.run_for(1000)
    assert sim.leader() is leader


def test_a_vote_far_ahead_is_refused_but_a_near_one_still_counts():
    sim = settled()
    leader, follower = _leader_and_follower(sim)
    epoch = leader.core.epoch
    far = epoch + SIM_CONFIG.max_epoch_jump + 1
    before = state(leader)
    answer = deliver(sim, leader, VoteRequest(follower.node_id, leader.node_id, far, epoch, 0))
    assert answer.error == ErrorCode.INVALID_REQUEST and "ahead" in answer.error_message
    assert state(leader) == before
    # Raft itself: a leader that meets a newer epoch within bounds steps down. Without
    # authentication a forged Vote from a real voter's id still does this (see validation.py).
    deliver(sim, leader, VoteRequest(follower.node_id, leader.node_id, epoch + 1, epoch, 0))
    assert not leader.core.is_leader and leader.core.epoch == epoch + 1


def test_a_healthy_quorum_ignores_announcements_of_newer_epochs():
    sim = settled()
    leader, follower = _leader_and_follower(sim)
    epoch = leader.core.epoch
    before = {n.node_id: state(n) for n in sim.nodes.values()}
    for i in range(1, 50):  # a stream of them, each one epoch further
        for node in (leader, follower):
            other = (
                follower
                if node is leader
                else next(n for n in sim.nodes.values() if n.voter and n not in (leader, follower))
            )
            answer = deliver(
                sim, node, BeginQuorumEpochRequest(other.node_id, node.node_id, epoch + i)
            )
            assert answer.error == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert {n.node_id: state(n) for n in sim.nodes.values()} == before
    sim.run_for(2000)
    assert sim.leader() is leader and leader.core.epoch == epoch


def test_begin_quorum_epoch_naming_a_second_leader_of_the_epoch_is_refused():
    sim = settled()
    leader, follower = _leader_and_follower(sim)
    third = next(n for n in sim.nodes.values() if n.voter and n not in (leader, follower))
    before = state(follower)
    answer = deliver(
        sim, follower, BeginQuorumEpochRequest(third.node_id, follower.node_id, follower.core.epoch)
    )
    assert answer.error == ErrorCode.INVALID_REQUEST
    assert f"already has leader {leader.node_id}" in answer.error_message
    assert state(follower) == before


def test_end_quorum_epoch_of_an_epoch_never_heard_of_moves_nothing():
    sim = settled()
    leader, follower = _leader_and_follower(sim)
    before = state(follower)
    answer = deliver(
        sim,
        follower,
        EndQuorumEpochRequest(leader.node_id, follower.node_id, follower.core.epoch + 1, ()),
    )
    assert answer.error == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert state(follower) == before
    sim.run_for(1000)
    assert sim.leader() is leader


def test_a_node_far_behind_catches_up_from_the_answers_to_its_own_requests():
    sim = Simulation(seed=8, voters=3, observers=1)
    ahead = 5 * SIM_CONFIG.max_epoch_jump
    for node_id in (1, 2):  # two voters come back from a past far beyond node 3's
        sim.crash(node_id)
        sim.nodes[node_id].store.write(ElectionState(ahead))
        sim.restart(node_id)
    assert sim.run_until(lambda: sim.leader() is not None, 3000)
    leader = sim.leader()
    assert leader.core.epoch > ahead
    _, position = sim.propose(1)
    late = sim.nodes[3]
    assert sim.run_until(
        lambda: late.core.leader_id == leader.node_id and late.log.log_end_offset > position.offset,
        5000,
    )
    assert late.core.epoch == leader.core.epoch


def test_a_voter_at_the_last_epochs_waits_instead_of_overflowing():
    for voters in ({1}, {1, 2, 3}):
        store = MemoryElectionStore(ElectionState(MAX_EPOCH - 1, None, None))
        core = RaftCore(
            1, frozenset(voters), MemoryRaftLog(), store, random.Random(1), SIM_CONFIG, 0
        )
        for now in range(0, 20 * SIM_CONFIG.election_timeout_ms, 50):
            core.tick(now)
            while core.has_ready():
                ready = core.ready()
                assert all(m.epoch < MAX_EPOCH for m in ready.messages)
                core.advance(ready)
        assert core.epoch == MAX_EPOCH - 1 and not core.is_leader
        assert core.role == "Unattached"
