"""KIP-101: a follower holding a tail from an old epoch truncates to where the new leader's copy
of that epoch ends (asking again when it never saw that epoch), never blindly to its HW."""

from replication_helpers import Replica, fetch_once

from broker.replication import EpochEndOffset, Record, Truncated


def test_a_divergent_tail_is_cut_at_the_leaders_epoch_end_not_at_the_high_watermark():
    r1, r2, r3 = Replica(1), Replica(2), Replica(3)
    r1.state.become_leader(1, 0, (1, 2, 3), (1, 2, 3), now_ms=0)
    r2.state.become_follower(1, 1, 0, now_ms=0)
    r3.state.become_follower(1, 1, 0, now_ms=0)
    r1.state.append_as_leader([b"a", b"b", b"c", b"d", b"e"], acks=-1, now_ms=0)
    fetch_once(r2, r1, 1)  # r2 takes all five
    fetch_once(r3, r1, 1, max_records=3)  # r3 takes a, b, c
    fetch_once(r2, r1, 2, max_records=0)  # r2 acknowledges five; the answer carries HW 0
    fetch_once(r3, r1, 3, max_records=0)  # r3 acknowledges three: HW 3
    assert r1.state.high_watermark == 3
    assert (r2.log.log_end_offset, r2.state.high_watermark) == (5, 0)

    # r1 dies; the controller elects r3 (in the ISR) in epoch 2; d, e were never committed.
    r3.state.become_leader(2, 1, (2, 3), (1, 2, 3), now_ms=10)
    r3.state.append_as_leader([b"f"], acks=1, now_ms=10)
    r2.state.become_follower(3, 2, 1, now_ms=10)

    decision, effects = fetch_once(r2, r3, 11)
    assert decision.diverging_epoch == EpochEndOffset(1, 3)
    assert effects == (Truncated(3),)
    assert r2.payloads() == [b"a", b"b", b"c"]  # cut at 3, not at its HW of 0
    fetch_once(r2, r3, 12)
    assert r2.payloads() == r3.payloads() == [b"a", b"b", b"c", b"f"]
    assert [r.leader_epoch for r in r2.log.records()] == [1, 1, 1, 2]


def test_a_follower_that_never_saw_the_leaders_epoch_cuts_in_steps():
    # Leader (epoch 4): e1 [0, 1], e2 [2, 3], e4 [4]. Follower: e1 [0, 1], then e3 [2, 3] from an
    # epoch-3 leader whose writes never committed; it has no epoch 2 at all.
    leader, follower = Replica(1), Replica(2)
    leader.log.append_as_follower(
        [Record(0, 1, b"a"), Record(1, 1, b"b"), Record(2, 2, b"c"), Record(3, 2, b"d")]
    )
    leader.state = type(leader.state)(1, leader.log, leader.config, 1, high_watermark=2)
    leader.state.become_leader(4, 0, (1, 2), (1, 2), now_ms=0)
    leader.state.append_as_leader([b"e"], acks=1, now_ms=0)
    follower.log.append_as_follower(
        [Record(0, 1, b"a"), Record(1, 1, b"b"), Record(2, 3, b"x"), Record(3, 3, b"y")]
    )
    follower.state.become_follower(1, 4, 0, now_ms=0)

    decision, effects = fetch_once(follower, leader, 1)
    assert decision.diverging_epoch == EpochEndOffset(2, 4)
    assert effects == (Truncated(2),)  # its own end of epoch 1, the largest below 2
    decision, effects = fetch_once(follower, leader, 2)
    assert decision.read_from == 2 and not any(isinstance(e, Truncated) for e in effects)
    assert follower.payloads() == leader.payloads() == [b"a", b"b", b"c", b"d", b"e"]


def test_a_deposed_leader_forgets_its_empty_epoch_and_keeps_its_committed_prefix():
    # r1 led epoch 5 without appending: its epoch cache says epoch 5 starts at its log end.
    r1, r2 = Replica(1), Replica(2)
    r1.state.become_leader(1, 0, (1, 2), (1, 2), now_ms=0)
    r2.state.become_follower(1, 1, 0, now_ms=0)
    r1.state.append_as_leader([b"a", b"b"], acks=-1, now_ms=0)
    fetch_once(r2, r1, 1)
    fetch_once(r2, r1, 2)
    r1.state.become_leader(5, 1, (1, 2), (1, 2), now_ms=3)
    assert r1.log.latest_epoch == 5

    r2.state.become_leader(6, 2, (1, 2), (1, 2), now_ms=4)
    r2.state.append_as_leader([b"c"], acks=1, now_ms=4)
    r1.state.become_follower(2, 6, 2, now_ms=4)
    decision, effects = fetch_once(r1, r2, 5)
    assert decision.diverging_epoch == EpochEndOffset(1, 2) and effects == (Truncated(2),)
    assert r1.payloads() == [b"a", b"b"] and r1.log.latest_epoch == 1
    fetch_once(r1, r2, 6)
    assert r1.payloads() == [b"a", b"b", b"c"]


def test_a_new_leader_that_has_not_appended_yet_still_names_the_divergence():
    # r3 (epoch 2 leader, now gone) wrote z that r2 never saw; r2 leads epoch 3 with no append yet.
    # r2 must answer from its epoch-3 start (assigned on becoming leader), not "unknown epoch",
    # which would leave r3 only the blind fallback of its (lagging) high watermark.
    r2, r3 = Replica(2), Replica(3)
    for log in (r2.log, r3.log):
        log.append_as_follower([Record(0, 1, b"a"), Record(1, 1, b"b")])
    r3.log.append_as_follower([Record(2, 2, b"z")])
    r2.state.become_leader(3, 0, (2, 3), (2, 3), now_ms=0)
    r3.state.become_follower(2, 3, 0, now_ms=0)
    assert r3.state.high_watermark == 0

    decision, effects = fetch_once(r3, r2, 1)
    assert decision.diverging_epoch == EpochEndOffset(1, 2)
    assert effects == (Truncated(2),)
    assert r3.payloads() == [b"a", b"b"]
