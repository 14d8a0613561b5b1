"""Vote, BeginQuorumEpoch and EndQuorumEpoch from a node that is not a voter (a broker, an unknown
id) are refused with INCONSISTENT_VOTER_SET and change nothing, on the leader or a follower; a
Fetch from an unknown id never moves the high watermark, and unknown ids cost bounded memory."""

import pytest
from forged_requests import deliver, settled, state

from clients.errors import ErrorCode
from kraft.raft.leader_state import MAX_OBSERVERS
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    VoteRequest,
)

# 9 is no node at all; 4 is the observer (a broker): neither may elect or announce a leader.
FORGED = {
    "vote": lambda src, dst, epoch: VoteRequest(src, dst, epoch + 1, epoch, 10**6),
    "pre-vote": lambda src, dst, epoch: VoteRequest(
        src, dst, epoch + 1, epoch, 10**6, pre_vote=True
    ),
    "begin-quorum-epoch": lambda src, dst, epoch: BeginQuorumEpochRequest(src, dst, epoch + 1),
    "begin-quorum-epoch-same-epoch": lambda src, dst, epoch: BeginQuorumEpochRequest(
        src, dst, epoch
    ),
    "end-quorum-epoch": lambda src, dst, epoch: EndQuorumEpochRequest(src, dst, epoch, ()),
}


@pytest.mark.parametrize("kind", sorted(FORGED))
@pytest.mark.parametrize("sender", [9, 4], ids=["unknown-id", "observer"])
@pytest.mark.parametrize("target", ["leader", "follower"])
def test_an_election_request_from_a_non_voter_changes_nothing(kind, sender, target):
    sim = settled()
    leader = sim.leader()
    node = (
        leader
        if target == "leader"
        else next(n for n in sim.nodes.values() if n.voter and n is not leader)
    )
    before = {n.node_id: state(n) for n in sim.nodes.values()}

    answer = deliver(sim, node, FORGED[kind](sender, node.node_id, node.core.epoch))

    assert answer.error == ErrorCode.INCONSISTENT_VOTER_SET
    assert f"node {sender} is not a voter" in answer.error_message
    assert not getattr(answer, "vote_granted", False)
    assert {n.node_id: state(n) for n in sim.nodes.values()} == before
    sim.run_for(1000)  # and nothing follows from it later either
    assert sim.leader() is leader and leader.core.epoch == before[leader.node_id][1]


def test_an_observer_takes_no_begin_quorum_epoch():
    sim = settled()
    leader, observer = sim.leader(), sim.nodes[4]
    before = state(observer)
    answer = deliver(
        sim, observer, BeginQuorumEpochRequest(leader.node_id, 4, observer.core.epoch + 1)
    )
    assert answer.error == ErrorCode.INCONSISTENT_VOTER_SET
    assert "observer" in answer.error_message
    assert state(observer) == before


def test_end_quorum_epoch_naming_a_non_voter_successor_is_refused():
    sim = settled()
    leader = sim.leader()
    follower = next(n for n in sim.nodes.values() if n.voter and n is not leader)
    before = state(follower)
    answer = deliver(
        sim,
        follower,
        EndQuorumEpochRequest(leader.node_id, follower.node_id, follower.core.epoch, (9,)),
    )
    assert answer.error == ErrorCode.INVALID_REQUEST
    assert "non-voters 9" in answer.error_message
    assert state(follower) == before
    assert follower.core.leader_and_epoch.leader_id == leader.node_id  # no early election


def test_a_fetch_from_an_unknown_replica_never_moves_the_high_watermark():
    sim = settled()
    leader = sim.leader()
    for n in sim.nodes.values():
        if n is not leader:
            sim.crash(n.node_id)
    hw = leader.core.high_watermark
    _, position = sim.propose(2)
    sim.run_for(20)
    end = leader.log.log_end_offset
    assert position.offset < end
    # Ids 7 and 8 claim to hold everything: with the leader that would be "3 of 3 voters".
    for i, replica in enumerate((7, 8)):
        leader.core.step(
            FetchRequest(
                replica,
                leader.node_id,
                leader.core.epoch,
                end,
                leader.log.last_fetched_epoch,
                request_id=i + 1,
            ),
            sim.now,
        )
        sim.pump(leader)
    assert leader.core.high_watermark == hw
    assert {o.replica_id for o in leader.core.describe().observers} >= {7, 8}


def test_fetches_from_endless_unknown_ids_keep_a_bounded_observer_list():
    sim = settled()
    leader = sim.leader()
    for replica in range(100, 100 + MAX_OBSERVERS + 50):
        leader.core.step(
            FetchRequest(replica, leader.node_id, leader.core.epoch, 0, 0, request_id=1), sim.now
        )
    sim.pump(leader)
    observers = {o.replica_id for o in leader.core.describe().observers}
    assert len(observers) == MAX_OBSERVERS
    assert 100 + MAX_OBSERVERS + 49 in observers
