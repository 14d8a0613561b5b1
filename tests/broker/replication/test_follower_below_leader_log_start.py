"""A follower whose log ends below the leader's log start (retention ran on the leader while it
was away) empties its log, starts it at the leader's log start, catches up and rejoins the ISR,
as Kafka's truncateFullyAndStartAt; it got OFFSET_OUT_OF_RANGE forever before."""

from replication_helpers import Replica, fetch_once

from broker.replication import FetchAnswer, ProposeIsr, Truncated
from clients.errors import ErrorCode


def test_a_follower_behind_the_leaders_log_start_starts_over_there_and_rejoins_the_isr():
    leader, follower = Replica(1), Replica(2, broker_epoch=20)
    leader.state.become_leader(1, 0, (1,), (1, 2), now_ms=0)
    follower.state.become_follower(1, 1, 0, now_ms=0)
    leader.state.append_as_leader([b"a", b"b", b"c"], acks=1, now_ms=0)
    fetch_once(follower, leader, 1)  # the follower holds 0..2, then goes away
    assert follower.log.log_end_offset == 3
    leader.state.append_as_leader([b"d%d" % i for i in range(7)], acks=1, now_ms=2)
    leader.log.delete_records_before(8)  # retention: the leader keeps 8, 9

    decision, effects = fetch_once(follower, leader, 3)
    assert decision.error == ErrorCode.OFFSET_OUT_OF_RANGE and decision.log_start_offset == 8
    assert effects == (Truncated(8),)
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (8, 8)
    assert follower.log.latest_epoch == -1 and follower.state.high_watermark == 8

    decision, effects = fetch_once(follower, leader, 4)  # fetches 8, 9 from the leader
    assert decision.error == ErrorCode.NONE and follower.payloads() == leader.payloads()
    decision, _ = fetch_once(follower, leader, 5)  # at the log end: back in the ISR
    assert decision.effects == (ProposeIsr(1, 0, (1, 2), (1, 20)),)


def test_a_stale_out_of_range_answer_does_not_empty_the_log():
    leader, follower = Replica(1), Replica(2)
    leader.state.become_leader(1, 0, (1,), (1, 2), now_ms=0)
    follower.state.become_follower(1, 1, 0, now_ms=0)
    leader.state.append_as_leader([b"a", b"b"], acks=1, now_ms=0)
    request = follower.state.fetch_request()  # asks from 0 ...
    fetch_once(follower, leader, 1)  # ... but another answer moved it to 2
    leader.log.delete_records_before(2)
    decision = leader.state.handle_follower_fetch(2, 0, -1, 1, 2)
    assert follower.state.handle_fetch_response(request, FetchAnswer.of(decision), 2) == ()
    assert follower.payloads() == [b"a", b"b"]
