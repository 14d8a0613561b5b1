"""Fetches a leader must refuse (stale or newer leader epoch, not the leader, unknown replica,
offset outside the log) and answers a follower must drop: none moves a log, a state or a HW."""

from replication_helpers import Replica, fetch_once

from broker.replication import FetchAnswer, FetchDecision, Record
from clients.errors import ErrorCode


def _cluster():
    leader, follower = Replica(1), Replica(2)
    leader.state.become_leader(3, 0, (1, 2), (1, 2, 3), now_ms=0)
    follower.state.become_follower(1, 3, 0, now_ms=0)
    leader.state.append_as_leader([b"a", b"b"], acks=1, now_ms=0)
    fetch_once(follower, leader, 1)
    fetch_once(follower, leader, 2)
    return leader, follower


def _snapshot(leader):
    s = leader.state
    f = s.follower_state(2)
    return (
        leader.log.records(),
        s.high_watermark,
        s.isr,
        s.pending_isr,
        (f.log_end_offset, f.last_caught_up_ms, f.last_fetch_ms),
    )


def test_the_leader_refuses_fetches_it_must_not_answer_and_changes_nothing():
    leader, _ = _cluster()
    before = _snapshot(leader)
    fetch = leader.state.handle_follower_fetch
    cases = {
        "older epoch": (fetch(2, 2, 3, 2, 50), ErrorCode.FENCED_LEADER_EPOCH),
        "newer epoch": (fetch(2, 2, 3, 4, 50), ErrorCode.UNKNOWN_LEADER_EPOCH),
        "unknown replica": (fetch(9, 2, 3, 3, 50), ErrorCode.NOT_LEADER_OR_FOLLOWER),
        "below log start": (fetch(2, -1, -1, 3, 50), ErrorCode.OFFSET_OUT_OF_RANGE),
        "past the end, no epoch": (fetch(2, 7, -1, 3, 50), ErrorCode.OFFSET_OUT_OF_RANGE),
    }
    for name, (decision, code) in cases.items():
        assert decision.error == code, name
        assert decision.read_from is None and decision.diverging_epoch is None, name
        assert decision.effects == () and decision.message, name
    assert _snapshot(leader) == before
    assert "not assigned" in cases["unknown replica"][0].message


def test_a_replica_that_is_not_the_leader_answers_not_leader_or_follower():
    _, follower = _cluster()
    decision = follower.state.handle_follower_fetch(3, 0, -1, 3, 50)
    assert decision.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (
        Replica(3).state.handle_follower_fetch(2, 0, -1, 3, 50).error
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    )  # a broker that has no role yet knows no epoch


def test_a_diverging_fetch_does_not_count_as_an_acknowledgement():
    leader, _ = _cluster()
    before = _snapshot(leader)
    decision = leader.state.handle_follower_fetch(2, 5, 2, 3, 60)  # epoch 2 is not on our log
    assert decision.diverging_epoch is not None and decision.effects == ()
    assert _snapshot(leader) == before


def test_a_follower_drops_stale_and_failed_answers():
    leader, follower = _cluster()
    leader.state.append_as_leader([b"c"], acks=1, now_ms=3)
    request = follower.state.fetch_request()
    log_before = follower.log.records()
    late = FetchAnswer.of(FetchDecision(high_watermark=3, read_from=2), (Record(2, 3, b"c"),))
    # An answer to an older position (it fetched again meanwhile) or in another leader epoch.
    older = type(request)(2, 1, 3, 1, 3)
    assert follower.state.handle_fetch_response(older, late, 4) == ()
    other_epoch = type(request)(2, 1, 2, 2, 3)
    assert follower.state.handle_fetch_response(other_epoch, late, 4) == ()
    fenced = FetchAnswer(ErrorCode.FENCED_LEADER_EPOCH)
    assert follower.state.handle_fetch_response(request, fenced, 4) == ()
    assert follower.log.records() == log_before and follower.state.high_watermark == 2
    # The answer to the current request goes in.
    follower.state.handle_fetch_response(request, late, 5)
    assert follower.payloads() == [b"a", b"b", b"c"]
    assert follower.state.handle_fetch_response(request, late, 6) == ()  # a duplicate
    assert follower.payloads() == [b"a", b"b", b"c"]
