"""The membership core as plain data: the join/sync handshake (follower and leader), heartbeats,
eager revocation before every rejoin, each error code's reaction, session and poll timeouts,
static membership, and stale answers ignored. No I/O, a fake clock."""

import pytest

from clients.consumer.membership import (
    ASSIGNING,
    JOINING,
    REVOKING,
    STABLE,
    SYNCING,
    UNJOINED,
    Assign,
    CoordinatorUnknown,
    Fatal,
    Heartbeat,
    JoinedMember,
    JoinGroup,
    JoinResult,
    LeaveGroup,
    Membership,
    MembershipConfig,
    NeedPartitionCounts,
    Revoke,
    SyncGroup,
    SyncResult,
)
from clients.errors import ErrorCode as E
from clients.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from clients.types import TopicPartition as TP

HB, SESSION, POLL, BACKOFF = 100, 1000, 5000, 10


def config(**kw):
    return MembershipConfig(
        "g",
        heartbeat_interval_ms=HB,
        session_timeout_ms=SESSION,
        max_poll_interval_ms=POLL,
        retry_backoff_ms=BACKOFF,
        **kw,
    )


def only(effects, kind):
    found = [e for e in effects if isinstance(e, kind)]
    assert len(found) == 1, effects
    return found[0]


def kinds(effects):
    return [type(e).__name__ for e in effects]


def assignment(*tps):
    return encode_assignment(Assignment(tuple(tps)))


def stable(m=None, partitions=(TP("t", 0), TP("t", 1)), now=0, member="m1", generation=1):
    """A follower taken through join and sync to Stable owning `partitions`."""
    m = m or Membership(config(), now)
    join = only(m.subscribe(["t"], now), JoinGroup)
    sync = only(
        m.on_join(join, JoinResult(E.NONE, member, generation, "range", "leader"), now), SyncGroup
    )
    out = m.on_sync(sync, SyncResult(E.NONE, assignment(*partitions)), now)
    assert out == [Assign(tuple(partitions), generation)] and m.state == STABLE
    return m


def test_first_join_asks_for_a_member_id_then_syncs_as_a_follower():
    m = Membership(config(), 0)
    first = only(m.subscribe(["t"], 0), JoinGroup)
    assert first.member_id == "" and first.rebalance_timeout_ms == POLL
    assert [name for name, _ in first.protocols] == ["range", "sticky"]
    assert decode_subscription(first.protocols[0][1]).topics == ("t",)
    second = only(m.on_join(first, JoinResult(E.MEMBER_ID_REQUIRED, "m1"), 0), JoinGroup)
    assert second.member_id == "m1"
    sync = only(m.on_join(second, JoinResult(E.NONE, "m1", 3, "range", "other"), 1), SyncGroup)
    assert sync == SyncGroup(3, "m1", None, "range", ()) and m.state == SYNCING
    assert m.on_sync(sync, SyncResult(E.NONE, assignment(TP("t", 1))), 2) == [
        Assign((TP("t", 1),), 3)
    ]
    assert m.tick(2 + HB - 1) == []
    assert m.tick(2 + HB) == [Heartbeat(3, "m1", None)]


def test_the_leader_runs_the_first_protocol_over_every_members_subscription():
    m = Membership(config(), 0)
    join = only(m.subscribe(["t"], 0), JoinGroup)
    sub = encode_subscription(Subscription(("t",)))
    members = tuple(JoinedMember(f"m{i}", None, sub) for i in (1, 2, 3))
    need = only(
        m.on_join(join, JoinResult(E.NONE, "m1", 1, "range", "m1", members), 0), NeedPartitionCounts
    )
    assert need == NeedPartitionCounts(1, ("t",)) and m.state == ASSIGNING
    assert m.on_partition_counts(0, {"t": 6}, 0) == []  # another generation's
    sync = only(m.on_partition_counts(1, {"t": 6}, 0), SyncGroup)
    got = {member: decode_assignment(data).partitions for member, data in sync.assignments}
    assert got == {
        "m1": (TP("t", 0), TP("t", 1)),
        "m2": (TP("t", 2), TP("t", 3)),
        "m3": (TP("t", 4), TP("t", 5)),
    }


def test_a_static_leader_told_to_skip_the_assignment_syncs_like_a_follower():
    m = Membership(config(group_instance_id="i1"), 0)
    join = only(m.subscribe(["t"], 0), JoinGroup)
    assert join.member_id == "" and join.group_instance_id == "i1"
    me = (JoinedMember("m1", "i1", encode_subscription(Subscription(("t",)))),)
    out = m.on_join(join, JoinResult(E.NONE, "m1", 4, "range", "m1", me, skip_assignment=True), 0)
    assert out == [SyncGroup(4, "m1", "i1", "range", ())]


def test_rebalance_revokes_everything_before_rejoining_and_keeps_heartbeating_meanwhile():
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    out = m.on_heartbeat(hb, E.REBALANCE_IN_PROGRESS, HB)
    assert out == [Revoke((TP("t", 0), TP("t", 1)), lost=False)] and m.state == REVOKING
    assert m.commit_identity() == (1, "m1", None)  # commit before revoking still counts
    assert m.tick(2 * HB) == [Heartbeat(1, "m1", None)]
    rejoin = only(m.revoked(2 * HB + 1), JoinGroup)
    assert rejoin.member_id == "m1" and m.owned == () and m.state == JOINING
    # What it had goes along, for the sticky assignor (Kafka's StickyAssignor user data).
    assert decode_subscription(rejoin.protocols[1][1]).owned_partitions == (TP("t", 0), TP("t", 1))
    assert m.commit_identity() is None


@pytest.mark.parametrize(
    "error, expect, state, member_id",
    [
        (E.NONE, [], STABLE, "m1"),
        (E.ILLEGAL_GENERATION, ["Revoke"], REVOKING, "m1"),
        (E.UNKNOWN_MEMBER_ID, ["Revoke"], REVOKING, ""),
        (E.FENCED_INSTANCE_ID, ["Fatal"], UNJOINED, "m1"),
        (E.NOT_COORDINATOR, ["CoordinatorUnknown"], STABLE, "m1"),
        (E.COORDINATOR_NOT_AVAILABLE, ["CoordinatorUnknown"], STABLE, "m1"),
        (E.NETWORK_EXCEPTION, ["CoordinatorUnknown"], STABLE, "m1"),
        (E.COORDINATOR_LOAD_IN_PROGRESS, [], STABLE, "m1"),
        (E.INVALID_REQUEST, ["Fatal"], UNJOINED, "m1"),
    ],
)
def test_heartbeat_answers(error, expect, state, member_id):
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    out = m.on_heartbeat(hb, error, HB + 1)
    assert kinds(out) == expect and m.state == state and m.member_id == member_id
    if expect == ["Revoke"]:
        assert out[0].lost and m.generation == -1 and m.commit_identity() is None
    if error in (E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS):
        assert m.tick(HB + BACKOFF) == []  # retried after the backoff,
        assert m.tick(HB + 1 + BACKOFF) == [hb]  # not a whole interval later


def test_lost_partitions_rejoin_as_a_new_generation_without_claiming_them():
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    only(m.on_heartbeat(hb, E.UNKNOWN_MEMBER_ID, HB), Revoke)
    join = only(m.revoked(HB), JoinGroup)
    assert join.member_id == ""
    assert decode_subscription(join.protocols[1][1]).owned_partitions == ()


@pytest.mark.parametrize(
    "error, expect, member_id",
    [
        (E.UNKNOWN_MEMBER_ID, ["JoinGroup"], ""),
        (E.ILLEGAL_GENERATION, ["JoinGroup"], "m1"),
        (E.REBALANCE_IN_PROGRESS, [], "m1"),  # after the backoff
        (E.NOT_COORDINATOR, ["CoordinatorUnknown"], "m1"),
        (E.COORDINATOR_LOAD_IN_PROGRESS, [], "m1"),
        (E.FENCED_INSTANCE_ID, ["Fatal"], "m1"),
        (E.INVALID_SESSION_TIMEOUT, ["Fatal"], "m1"),
        (E.INCONSISTENT_GROUP_PROTOCOL, ["Fatal"], "m1"),
    ],
)
def test_join_answers(error, expect, member_id):
    m = Membership(config(), 0)
    first = only(m.subscribe(["t"], 0), JoinGroup)
    join = only(m.on_join(first, JoinResult(E.MEMBER_ID_REQUIRED, "m1"), 0), JoinGroup)
    out = m.on_join(join, JoinResult(error, "m1"), 5)
    assert kinds(out) == expect and m.member_id == member_id
    if expect[-1:] == ["Fatal"]:
        assert m.tick(10_000) == [] and "'g'" in out[0].message
    elif expect != ["JoinGroup"]:
        assert m.tick(5 + BACKOFF - 1) == []
        assert kinds(m.tick(5 + BACKOFF)) == ["JoinGroup"]


@pytest.mark.parametrize(
    "error, expect, generation, member_id",
    [
        (E.REBALANCE_IN_PROGRESS, ["JoinGroup"], 1, "m1"),
        (E.ILLEGAL_GENERATION, ["JoinGroup"], -1, "m1"),
        (E.UNKNOWN_MEMBER_ID, ["JoinGroup"], -1, ""),
        (E.NOT_COORDINATOR, ["CoordinatorUnknown"], 1, "m1"),
        (E.FENCED_INSTANCE_ID, ["Fatal"], 1, "m1"),
    ],
)
def test_sync_answers(error, expect, generation, member_id):
    m = Membership(config(), 0)
    join = only(m.subscribe(["t"], 0), JoinGroup)
    sync = only(m.on_join(join, JoinResult(E.NONE, "m1", 1, "range", "x"), 0), SyncGroup)
    out = m.on_sync(sync, SyncResult(error), 0)
    assert kinds(out) == expect and (m.generation, m.member_id) == (generation, member_id)
    assert m.owned == ()


def test_no_heartbeat_answer_for_a_session_means_the_coordinator_is_gone():
    m = stable()
    only(m.tick(HB), Heartbeat)  # never answered
    assert m.tick(SESSION) == []
    assert m.next_deadline_ms() == SESSION + 1
    assert kinds(m.tick(SESSION + 1)) == ["CoordinatorUnknown", "Heartbeat"]


@pytest.mark.parametrize("static", [False, True])
def test_poll_timeout_leaves_and_the_next_poll_rejoins_with_the_partitions_lost(static):
    m = stable(Membership(config(group_instance_id="i1" if static else None), 0))
    for t in range(HB, POLL + 1, HB):  # heartbeats, but no poll
        for e in m.tick(t):
            m.on_heartbeat(e, E.NONE, t)
    assert m.next_deadline_ms() == POLL + 1
    out = m.tick(POLL + 1)
    assert out == ([] if static else [LeaveGroup("m1")])
    assert m.state == UNJOINED and m.member_id == "" and m.tick(POLL + 5000) == []
    out = m.note_poll(POLL + 6000)
    assert out == [Revoke((TP("t", 0), TP("t", 1)), lost=True)]
    join = only(m.revoked(POLL + 6000), JoinGroup)
    assert join.member_id == "" and join.group_instance_id == ("i1" if static else None)


def test_poll_timeout_while_a_revocation_waits_does_not_revoke_twice():
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    only(m.on_heartbeat(hb, E.REBALANCE_IN_PROGRESS, HB), Revoke)
    m.tick(POLL + 1)
    assert m.note_poll(POLL + 2) == []  # the first Revoke still stands
    assert kinds(m.revoked(POLL + 3)) == ["JoinGroup"]


@pytest.mark.parametrize("static, expect", [(False, [LeaveGroup("m1")]), (True, [])])
def test_leave_sends_leave_group_only_for_dynamic_members(static, expect):
    m = stable(Membership(config(group_instance_id="i1" if static else None), 0))
    assert m.leave(10) == expect
    assert m.state == UNJOINED and m.commit_identity() == (-1, "", None)
    assert m.tick(100_000) == [] and m.next_deadline_ms() is None


def test_a_new_subscription_rejoins_now_when_stable_and_after_the_sync_when_joining():
    m = stable()
    assert m.subscribe(["t", "u"], 1) == [Revoke((TP("t", 0), TP("t", 1)))]
    join = only(m.revoked(2), JoinGroup)
    assert decode_subscription(join.protocols[0][1]).topics == ("t", "u")
    sync = only(m.on_join(join, JoinResult(E.NONE, "m1", 2, "range", "x"), 3), SyncGroup)
    assert m.subscribe(["t", "u", "v"], 4) == []  # mid-join: wait for its end
    out = m.on_sync(sync, SyncResult(E.NONE, assignment(TP("u", 0))), 5)
    assert out == [Assign((TP("u", 0),), 2), Revoke((TP("u", 0),))]


def test_only_the_leader_rebalances_when_a_partition_count_changes():
    leader = Membership(config(), 0)
    join = only(leader.subscribe(["t"], 0), JoinGroup)
    me = (JoinedMember("m1", None, encode_subscription(Subscription(("t",)))),)
    only(
        leader.on_join(join, JoinResult(E.NONE, "m1", 1, "range", "m1", me), 0), NeedPartitionCounts
    )
    sync = only(leader.on_partition_counts(1, {"t": 2}, 0), SyncGroup)
    leader.on_sync(sync, SyncResult(E.NONE, assignment(TP("t", 0), TP("t", 1))), 0)
    assert leader.on_metadata({"t": 2}, 1) == []
    assert kinds(leader.on_metadata({"t": 3}, 2)) == ["Revoke"]
    follower = stable()
    assert follower.on_metadata({"t": 3}, 1) == []


def test_stale_answers_are_ignored():
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    only(m.on_heartbeat(hb, E.REBALANCE_IN_PROGRESS, HB), Revoke)
    join = only(m.revoked(HB), JoinGroup)
    assert m.on_heartbeat(hb, E.UNKNOWN_MEMBER_ID, HB) == []  # answered already
    assert m.on_join(JoinGroup("m1", (), 1, 1, None), JoinResult(E.NONE, "m1", 9), HB) == []
    m.leave(HB)
    assert m.on_join(join, JoinResult(E.NONE, "m1", 2, "range", "x"), HB) == []
    assert m.state == UNJOINED


def test_commit_errors_react_like_heartbeat_errors():
    m = stable()
    assert m.on_commit_error(E.REBALANCE_IN_PROGRESS, 1) == [Revoke((TP("t", 0), TP("t", 1)))]
    m = stable()
    out = m.on_commit_error(E.ILLEGAL_GENERATION, 1)
    assert out == [Revoke((TP("t", 0), TP("t", 1)), lost=True)] and m.generation == -1


def test_empty_assignment_and_fatal_stop():
    m = stable(partitions=())  # nothing to give back
    assert kinds(m.subscribe(["u"], 1)) == ["JoinGroup"] and m.state == JOINING
    m = Membership(config(), 0)
    join = only(m.subscribe(["t"], 0), JoinGroup)
    fatal = only(m.on_join(join, JoinResult(E.FENCED_INSTANCE_ID, message="fenced"), 0), Fatal)
    assert fatal.code == E.FENCED_INSTANCE_ID and "same group_instance_id" in fatal.message
    assert m.subscribe(["u"], 1) == [] and m.note_poll(2) == []


@pytest.mark.parametrize(
    "kw",
    [
        dict(group_id=""),
        dict(assignors=("nope",)),
        dict(assignors=()),
        dict(heartbeat_interval_ms=50, session_timeout_ms=50),
    ],
)
def test_config_is_checked(kw):
    args = dict(group_id="g") | kw
    with pytest.raises(ValueError):
        MembershipConfig(**args)


def test_coordinator_unknown_carries_a_reason():
    m = stable()
    hb = only(m.tick(HB), Heartbeat)
    out = m.on_heartbeat(hb, E.NOT_COORDINATOR, HB)
    assert isinstance(out[0], CoordinatorUnknown) and "NOT_COORDINATOR" in out[0].reason
