"""While an AlterPartition is in flight the HW rests on the maximal ISR (the ISR plus pending
additions; a pending removal still counts): never fewer replicas than the controller may count."""

from replication_helpers import CONFIG, Replica, fetch_once

from broker.replication import HighWatermarkAdvanced, IsrChanged
from clients.errors import ErrorCode

LAG = CONFIG.replica_lag_time_max_ms


def _leader_with_isr_of_two():
    r1, r2, r3 = Replica(1), Replica(2), Replica(3)
    r1.state.become_leader(1, 0, (1, 2), (1, 2, 3), now_ms=0)
    r2.state.become_follower(1, 1, 0, now_ms=0)
    r3.state.become_follower(1, 1, 0, now_ms=0)
    return r1, r2, r3


def test_a_pending_addition_holds_the_high_watermark_at_the_joining_follower():
    r1, r2, r3 = _leader_with_isr_of_two()
    r1.state.append_as_leader([b"a", b"b"], acks=1, now_ms=0)
    fetch_once(r3, r1, 1)
    fetch_once(r2, r1, 1)
    decision, _ = fetch_once(r3, r1, 2)  # r3 at 2 >= HW 0: proposed in
    assert r1.state.pending_isr == (1, 2, 3) and r1.state.maximal_isr == (1, 2, 3)
    assert r1.state.isr == (1, 2)
    r1.state.append_as_leader([b"c", b"d"], acks=-1, now_ms=3)
    fetch_once(r2, r1, 4)
    fetch_once(r2, r1, 5)  # r2 has all four; r3 only two
    assert r1.state.high_watermark == 2  # the committed ISR alone would have said 4
    fetch_once(r3, r1, 6)
    decision, _ = fetch_once(r3, r1, 7)
    assert HighWatermarkAdvanced(4) in decision.effects


def test_a_pending_removal_does_not_release_the_high_watermark_until_confirmed():
    r1, r2, r3 = _leader_with_isr_of_two()
    r1.state.append_as_leader([b"a"], acks=1, now_ms=0)
    fetch_once(r2, r1, 1)
    fetch_once(r2, r1, 2)
    assert r1.state.high_watermark == 1
    r1.state.append_as_leader([b"b", b"c"], acks=-1, now_ms=3)  # r2 goes silent
    (shrink,) = r1.state.tick(LAG + 10)
    assert r1.state.pending_isr == (1,) and r1.state.maximal_isr == (1, 2)
    r1.state.append_as_leader([b"d"], acks=-1, now_ms=LAG + 11)
    assert r1.state.high_watermark == 1
    effects = r1.state.on_alter_partition_result(shrink, ErrorCode.NONE, 1, 1, (1,), LAG + 12)
    assert effects == (IsrChanged((1,), 1), HighWatermarkAdvanced(4))


def test_a_refused_addition_stops_counting_the_follower():
    r1, r2, r3 = _leader_with_isr_of_two()
    fetch_once(r2, r1, 1)
    (expand,) = fetch_once(r3, r1, 1)[0].effects
    assert r1.state.pending_isr == (1, 2, 3)
    r1.state.on_alter_partition_result(expand, ErrorCode.INELIGIBLE_REPLICA, 1, 0, (1, 2), 2)
    assert r1.state.maximal_isr == (1, 2) and r1.state.pending_isr is None
    r1.state.append_as_leader([b"a"], acks=-1, now_ms=3)
    fetch_once(r2, r1, 4)
    fetch_once(r2, r1, 5)
    assert r1.state.high_watermark == 1  # r3 (not fetching) no longer holds it back


def test_metadata_with_a_newer_partition_epoch_replaces_the_proposal():
    r1, r2, r3 = _leader_with_isr_of_two()
    (expand,) = fetch_once(r3, r1, 1)[0].effects
    assert r1.state.pending_isr == (1, 2, 3)
    # The controller fenced r2 meanwhile: our proposal will fail; its metadata wins at once.
    effects = r1.state.become_leader(1, 1, (1, 3), (1, 2, 3), now_ms=2)
    assert IsrChanged((1, 3), 1) in effects
    assert r1.state.pending_isr is None and r1.state.isr == (1, 3)
    assert r1.state.on_alter_partition_result(expand, ErrorCode.NONE, 1, 1, (1, 2, 3), 3) == ()
    assert r1.state.become_leader(1, 0, (1, 2), (1, 2, 3), now_ms=4) == ()  # stale metadata
    assert r1.state.isr == (1, 3)
