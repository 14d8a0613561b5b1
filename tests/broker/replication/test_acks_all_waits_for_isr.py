"""acks=all: refused (nothing appended) while the ISR is below min.insync.replicas, answered once
the HW passes the batch, or with an error if the ISR fell below the minimum or leadership moved."""

from replication_helpers import CONFIG, Replica, fetch_once

from broker.replication import ACKS_ALL
from clients.errors import ErrorCode

LAG = CONFIG.replica_lag_time_max_ms


def _three():
    r1, r2, r3 = Replica(1), Replica(2), Replica(3)
    r1.state.become_leader(1, 0, (1, 2, 3), (1, 2, 3), now_ms=0)
    r2.state.become_follower(1, 1, 0, now_ms=0)
    r3.state.become_follower(1, 1, 0, now_ms=0)
    return r1, r2, r3


def test_an_acks_all_batch_is_answered_once_every_isr_member_has_it():
    r1, r2, r3 = _three()
    result = r1.state.append_as_leader([b"a", b"b"], ACKS_ALL, now_ms=0)
    assert (result.error, result.first_offset, result.last_offset) == (ErrorCode.NONE, 0, 1)
    check = lambda: r1.state.acks_satisfied(result.last_offset, result.leader_epoch)  # noqa: E731
    assert check() is None
    fetch_once(r2, r1, 1)
    fetch_once(r2, r1, 2)
    assert check() is None  # r3 has not acknowledged yet
    fetch_once(r3, r1, 3)
    assert check() is None  # it has the records but not yet said so
    fetch_once(r3, r1, 4)
    assert check() == ErrorCode.NONE


def test_acks_all_is_refused_below_min_insync_replicas_and_acks_1_is_not():
    r1, r2, r3 = _three()
    (shrink,) = r1.state.tick(LAG + 1)
    r1.state.on_alter_partition_result(shrink, ErrorCode.NONE, 1, 1, (1,), LAG + 1)
    refused = r1.state.append_as_leader([b"a"], ACKS_ALL, now_ms=LAG + 2)
    assert refused.error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert "min.insync.replicas=2" in refused.message
    assert r1.log.log_end_offset == 0
    assert r1.state.append_as_leader([b"a"], 1, now_ms=LAG + 3).error == ErrorCode.NONE


def test_a_waiting_batch_fails_if_the_isr_falls_below_the_minimum():
    r1, r2, r3 = _three()
    fetch_once(r2, r1, 1)
    result = r1.state.append_as_leader([b"a"], ACKS_ALL, now_ms=2)
    (shrink,) = r1.state.tick(LAG + 5)  # neither follower caught up since
    r1.state.on_alter_partition_result(shrink, ErrorCode.NONE, 1, 1, (1,), LAG + 6)
    assert r1.state.high_watermark == 1
    assert (
        r1.state.acks_satisfied(result.last_offset, result.leader_epoch)
        == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )


def test_a_waiting_batch_fails_when_leadership_moves():
    r1, r2, r3 = _three()
    result = r1.state.append_as_leader([b"a"], ACKS_ALL, now_ms=0)
    r1.state.become_follower(2, 2, 1, now_ms=1)
    assert (
        r1.state.acks_satisfied(result.last_offset, result.leader_epoch)
        == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert (
        r1.state.append_as_leader([b"b"], ACKS_ALL, now_ms=2).error
        == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
