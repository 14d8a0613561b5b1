"""ISR shrink after replica.lag.time.max.ms without catching up (lastCaughtUpTimeMs: a slow, steady
follower stays); expand at the HW and the epoch start offset; one AlterPartition at a time."""

from replication_helpers import CONFIG, Replica, fetch_once

from broker.replication import IsrChanged, ProposeIsr
from clients.errors import ErrorCode

LAG = CONFIG.replica_lag_time_max_ms


def _three():
    r1, r2, r3 = Replica(1), Replica(2, broker_epoch=20), Replica(3, broker_epoch=30)
    r1.state.become_leader(1, 0, (1, 2, 3), (1, 2, 3), now_ms=0)
    r2.state.become_follower(1, 1, 0, now_ms=0)
    r3.state.become_follower(1, 1, 0, now_ms=0)
    return r1, r2, r3


def test_a_stuck_follower_is_proposed_out_after_the_lag_time_and_a_slow_one_stays():
    r1, r2, r3 = _three()
    for t in range(0, LAG + 100, 50):
        # Appends keep coming; r2 fetches one record at a time, so it never reaches the log
        # end, yet always reaches where the leader was at its previous fetch. r3 is silent.
        r1.state.append_as_leader([b"x%d" % t], acks=1, now_ms=t)
        fetch_once(r2, r1, t, max_records=1)
        if t <= LAG:
            assert r1.state.tick(t) == ()
    assert r1.log.log_end_offset > r1.state.follower_state(2).log_end_offset
    t = LAG + 100
    effects = r1.state.tick(t)
    assert effects == (ProposeIsr(1, 0, (1, 2), (1, 20)),)
    assert r1.state.isr == (1, 2, 3) and r1.state.pending_isr == (1, 2)
    assert r1.state.tick(t + 1) == ()  # one proposal at a time

    effects = r1.state.on_alter_partition_result(effects[0], ErrorCode.NONE, 1, 1, (1, 2), t + 2)
    assert effects[0] == IsrChanged((1, 2), 1)
    assert r1.state.isr == (1, 2) and r1.state.pending_isr is None


def test_an_unanswered_proposal_is_sent_again_and_an_ineligible_one_backs_off():
    r1, r2, r3 = _three()
    proposal = r1.state.tick(LAG + 1)[0]
    assert r1.state.tick(LAG + 2) == ()
    assert r1.state.tick(LAG + 1 + CONFIG.alter_partition_timeout_ms) == (proposal,)
    now = LAG + 2 + CONFIG.alter_partition_timeout_ms
    other = ProposeIsr(1, 0, (1, 3), (1, 30))  # an answer to some other proposal: ignored
    assert (
        r1.state.on_alter_partition_result(
            other, ErrorCode.INELIGIBLE_REPLICA, 1, 0, (1, 2, 3), now
        )
        == ()
    )
    assert r1.state.pending_isr == (1,)
    assert (
        r1.state.on_alter_partition_result(
            proposal, ErrorCode.INELIGIBLE_REPLICA, 1, 0, (1, 2, 3), now
        )
        == ()
    )
    assert r1.state.isr == (1, 2, 3) and r1.state.pending_isr is None
    assert r1.state.tick(now + 1) == ()
    assert r1.state.tick(now + CONFIG.alter_partition_backoff_ms) != ()


def test_after_a_stale_epoch_refusal_the_proposal_waits_for_metadata():
    # INVALID_UPDATE_VERSION: the partition moved on, perhaps by an earlier copy of this very
    # proposal. Keep the maximal ISR, stop resending, and take the next metadata as the truth.
    r1, r2, r3 = _three()
    fetch_once(r2, r1, 1)
    proposal = r1.state.tick(LAG + 1)[0]
    assert (
        r1.state.on_alter_partition_result(
            proposal, ErrorCode.INVALID_UPDATE_VERSION, 1, 1, (1, 2), LAG + 2
        )
        == ()
    )
    assert r1.state.pending_isr == (1, 2) and r1.state.maximal_isr == (1, 2, 3)
    assert r1.state.tick(LAG + 2 + 10 * CONFIG.alter_partition_timeout_ms) == ()
    assert r1.state.become_leader(1, 1, (1, 2), (1, 2, 3), now_ms=LAG + 3) != ()
    assert r1.state.pending_isr is None and r1.state.maximal_isr == (1, 2)


def test_a_follower_rejoins_once_it_reaches_the_high_watermark():
    r1, r2, r3 = _three()
    r1.state.append_as_leader([b"a", b"b", b"c"], acks=1, now_ms=0)
    for t in (1, 2):
        fetch_once(r2, r1, t)
    shrink = r1.state.tick(LAG + 10)[0]
    r1.state.on_alter_partition_result(shrink, ErrorCode.NONE, 1, 1, (1, 2), LAG + 10)
    assert r1.state.high_watermark == 3

    decision, _ = fetch_once(r3, r1, LAG + 20, max_records=2)  # fetch offset 0: not yet
    assert decision.effects == ()
    decision, _ = fetch_once(r3, r1, LAG + 30, max_records=0)  # fetch offset 2 < HW 3
    assert decision.effects == ()
    decision, _ = fetch_once(r3, r1, LAG + 40, max_records=1)  # still 2
    decision, _ = fetch_once(r3, r1, LAG + 50)  # fetch offset 3 == HW
    assert decision.effects == (ProposeIsr(1, 1, (1, 2, 3), (1, 20, 30)),)


def test_a_new_leader_admits_a_follower_only_past_its_epoch_start_offset():
    # r2 leads epoch 2 from offset 5 with a stale HW of 3 (r1, still in the ISR, is gone); r3
    # holds 4 records: at or above the HW, but it may lack records the previous leader committed
    # (here: e), so it must not join yet.
    r1, r2, r3 = _three()
    r1.state.append_as_leader([b"a", b"b", b"c", b"d", b"e"], acks=1, now_ms=0)
    fetch_once(r2, r1, 1)
    fetch_once(r3, r1, 1, max_records=3)
    fetch_once(r2, r1, 2)
    fetch_once(r3, r1, 3, max_records=0)  # HW 3
    fetch_once(r2, r1, 4)  # r2 learns HW 3
    fetch_once(r3, r1, 5, max_records=1)  # r3 takes d (the leader does not know yet)
    assert (r2.state.high_watermark, r3.log.log_end_offset) == (3, 4)

    r2.state.become_leader(2, 1, (1, 2), (1, 2, 3), now_ms=10)
    r3.state.become_follower(2, 2, 1, now_ms=10)
    assert r2.state.leader_epoch_start_offset == 5
    decision, _ = fetch_once(r3, r2, 11, max_records=0)
    assert decision.effects == ()  # 4 >= HW 3, but < epoch start 5
    decision, _ = fetch_once(r3, r2, 12)
    decision, _ = fetch_once(r3, r2, 13)
    assert decision.effects == (ProposeIsr(2, 1, (1, 2, 3), (-1, 20, 30)),)
    assert r2.state.high_watermark == 3  # r1 has not fetched in epoch 2: nothing commits
