"""Kafka's error codes for stale, unknown and fenced members, wrong generations, rebalances in
progress, bad requests and an unready coordinator: one table row per case."""

from dataclasses import replace

import pytest
from group_harness import CONFIG, Harness

from broker.group.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetAndMetadata,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from broker.group.partition_coordinator import GroupCoordinator
from clients.errors import ErrorCode as E

G = "g"


def stable():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    return h, a, b, gen


def heartbeat_case(setup, member, generation, instance=None):
    h, a, b, gen = stable()
    setup(h, a, b)
    return h.heartbeat(G, {"a": a, "b": b}.get(member, member), gen + generation, instance=instance)


def nothing(h, a, b):
    pass


def start_rebalance(h, a, b):
    h.join_new(G)


def rebalance_and_rejoin(h, a, b):
    """Generation + 1 formed, nobody synced: CompletingRebalance."""
    h.join(G, a)
    h.join(G, b)


HEARTBEATS = [
    # setup, member, generation offset, instance id, expected
    (nothing, "a", 0, None, E.NONE),
    (nothing, "someone-else", 0, None, E.UNKNOWN_MEMBER_ID),
    (nothing, "a", -1, None, E.ILLEGAL_GENERATION),
    (nothing, "a", 1, None, E.ILLEGAL_GENERATION),
    (nothing, "a", 0, "never-joined", E.UNKNOWN_MEMBER_ID),
    (start_rebalance, "a", 0, None, E.REBALANCE_IN_PROGRESS),
    (rebalance_and_rejoin, "a", 1, None, E.NONE),  # after the JoinGroup answer, before sync
    (rebalance_and_rejoin, "a", 0, None, E.ILLEGAL_GENERATION),
]


@pytest.mark.parametrize("setup, member, generation, instance, expected", HEARTBEATS)
def test_heartbeat(setup, member, generation, instance, expected):
    assert heartbeat_case(setup, member, generation, instance) == expected


def test_heartbeat_of_unknown_group_is_unknown_member():
    assert Harness().heartbeat("nope", "m", 1) == E.UNKNOWN_MEMBER_ID


def test_member_removed_by_leave_is_unknown_afterwards():
    h, a, b, gen = stable()
    h.leave(G, b)
    assert h.heartbeat(G, b, gen) == E.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync(G, b, gen)).error == E.UNKNOWN_MEMBER_ID
    assert h.answer(h.join(G, b)).error == E.UNKNOWN_MEMBER_ID


def test_sync_errors():
    h, a, b, gen = stable()
    assert h.answer(h.sync(G, a, gen - 1)).error == E.ILLEGAL_GENERATION
    assert h.answer(h.sync(G, "ghost", gen)).error == E.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync("other", a, gen)).error == E.UNKNOWN_MEMBER_ID
    wrong = SyncGroupRequest(G, gen, a, protocol_name="roundrobin")
    h.run(h.c.handle_sync_group("wrong", wrong, h.now))
    assert h.answer("wrong").error == E.INCONSISTENT_GROUP_PROTOCOL
    h.join_new(G)
    assert h.answer(h.sync(G, a, gen)).error == E.REBALANCE_IN_PROGRESS


JOINS = [
    # request changes, expected
    ({"member_id": "not-a-member"}, E.UNKNOWN_MEMBER_ID),
    ({"group_id": ""}, E.INVALID_GROUP_ID),
    ({"session_timeout_ms": CONFIG.min_session_timeout_ms - 1}, E.INVALID_SESSION_TIMEOUT),
    ({"session_timeout_ms": CONFIG.max_session_timeout_ms + 1}, E.INVALID_SESSION_TIMEOUT),
    ({"protocol_type": "connect"}, E.INCONSISTENT_GROUP_PROTOCOL),
    ({"protocols": (("sticky", b""),)}, E.INCONSISTENT_GROUP_PROTOCOL),
    ({}, E.MEMBER_ID_REQUIRED),
    ({"group_instance_id": "static-1"}, None),  # static members skip MEMBER_ID_REQUIRED
]


@pytest.mark.parametrize("changes, expected", JOINS)
def test_join_errors(changes, expected):
    h, a, b, gen = stable()
    req = replace(
        JoinGroupRequest(G, "", "consumer", (("range", b"sub"),), 10_000, 30_000), **changes
    )
    h.run(h.c.handle_join_group("j", req, h.now))
    answer = h.answer("j")
    if expected is None:
        assert answer is None and h.state(G) == "PreparingRebalance"
    else:
        assert answer.error == expected


def test_join_with_a_member_id_to_an_unknown_group():
    h = Harness()
    h.run(
        h.c.handle_join_group(
            "j", JoinGroupRequest("new", "m-1", "consumer", (("range", b""),), 10_000, 30_000), 0
        )
    )
    assert h.answer("j").error == E.UNKNOWN_MEMBER_ID
    assert h.c.list_groups().groups == ()  # the refused join left no group behind


def test_join_picks_the_protocol_every_member_supports():
    h = Harness()
    first = h.answer(h.join_new(G, protocols=(("sticky", b"s"), ("range", b"r"))))
    second = h.join_new(G, protocols=(("range", b"r2"),))
    h.join(G, first.member_id, protocols=(("sticky", b"s"), ("range", b"r")))
    assert h.answer(second).protocol_name == "range"


def test_leave_errors():
    h, a, b, gen = stable()
    answer = h.leave(G, "ghost", MemberIdentity("", "no-such-instance"))
    assert [e for _, e in answer.members] == [E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
    assert h.state(G) == "Stable"
    assert h.leave("no-group", a).members[0][1] == E.UNKNOWN_MEMBER_ID


def test_superseded_join_is_answered():
    h, a, b, gen = stable()
    first = h.join(G, a)
    second = h.join(G, a)
    assert h.answer(first).error == E.REBALANCE_IN_PROGRESS and h.answer(second) is None


def requests(c: GroupCoordinator):
    """Every entry point, each returning its error code."""
    yield c.handle_heartbeat(HeartbeatRequest(G, 1, "m"), 0).error
    yield c.handle_offset_fetch(OffsetFetchRequest(G)).error
    yield c.list_groups().error
    yield c.describe_group(G).error
    for name, call, req in (
        (
            "join",
            c.handle_join_group,
            JoinGroupRequest(G, "", "consumer", (("range", b""),), 10_000, 30_000),
        ),
        ("sync", c.handle_sync_group, SyncGroupRequest(G, 1, "m")),
        ("leave", c.handle_leave_group, LeaveGroupRequest(G, (MemberIdentity("m"),))),
    ):
        (effect,) = call(name, req, 0)
        yield effect.response.error
    commit = OffsetCommitRequest(G, {("t", 0): OffsetAndMetadata(1)})
    (effect,) = c.handle_offset_commit("commit", commit, 0)
    yield effect.response.partitions[("t", 0)]


def test_a_loading_coordinator_answers_load_in_progress():
    assert set(requests(GroupCoordinator())) == {E.COORDINATOR_LOAD_IN_PROGRESS}


def test_a_resigned_coordinator_answers_not_coordinator():
    c = GroupCoordinator()
    c.become_coordinator(0)
    c.resign()
    assert set(requests(c)) == {E.NOT_COORDINATOR}


def test_resign_answers_every_parked_request():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    h.auto_commit = False
    parked_join = h.join(G, a)
    commit = h.commit("simple", {("t", 0): 3})
    assert h.answer(parked_join) is None and h.answer(commit) is None
    h.run(h.c.resign())
    assert h.answer(parked_join).error == E.NOT_COORDINATOR
    assert h.answer(commit).partitions == {("t", 0): E.NOT_COORDINATOR}
