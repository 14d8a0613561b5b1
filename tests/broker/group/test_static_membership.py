"""Static membership (group.instance.id, KIP-345): a restart within the session timeout keeps the
assignment and causes no rebalance; the old incarnation is fenced; a late restart rebalances."""

from group_harness import REBALANCE_MS, SESSION_MS, Harness

from broker.group.messages import MemberIdentity
from clients.errors import ErrorCode as E

G = "static-group"


def form_static(h: Harness, instances=("i-a", "i-b")):
    handles = [h.join(G, instance=i) for i in instances]
    answers = h.rejoin_until_complete(G, handles, instance=None)
    members = [a.member_id for a in answers]
    gen = answers[0].generation_id
    h.complete_sync(G, members, gen)
    return dict(zip(instances, members)), gen


def test_restart_within_the_session_timeout_keeps_the_assignment_without_rebalance():
    h = Harness()
    ids, gen = form_static(h)
    old_b = ids["i-b"]
    h.advance(SESSION_MS // 2)  # the process restarts, losing its member id
    assert h.heartbeat(G, ids["i-a"], gen, instance="i-a") == E.NONE
    rejoin = h.answer(h.join(G, instance="i-b"))
    assert rejoin.error == E.NONE and rejoin.generation_id == gen
    assert rejoin.member_id != old_b and rejoin.members == ()
    assert h.state(G) == "Stable" and h.generation(G) == gen
    synced = h.answer(h.sync(G, rejoin.member_id, gen, instance="i-b"))
    assert synced.assignment == b"a-" + old_b.encode()  # what the old incarnation had
    # The old incarnation is fenced; the other member never noticed.
    assert h.heartbeat(G, old_b, gen, instance="i-b") == E.FENCED_INSTANCE_ID
    assert h.heartbeat(G, ids["i-a"], gen, instance="i-a") == E.NONE
    assert h.fresh().describe_group(G) == h.c.describe_group(G)


def test_the_new_member_id_is_answered_only_once_its_record_is_committed():
    h = Harness()
    ids, gen = form_static(h)
    h.auto_commit = False
    j = h.join(G, instance="i-a")
    assert h.answer(j) is None and len(h.pending) == 1
    h.complete_appends()
    assert h.answer(j).error == E.NONE


def test_static_leader_restart_is_told_not_to_assign_again():
    h = Harness()
    ids, gen = form_static(h)
    leader_instance = next(i for i, m in ids.items() if m == h.c.describe_group(G).leader)
    rejoin = h.answer(h.join(G, instance=leader_instance))
    assert rejoin.skip_assignment and rejoin.leader == rejoin.member_id
    assert len(rejoin.members) == 2
    assert h.state(G) == "Stable" and h.generation(G) == gen


def test_restart_with_new_subscription_rebalances():
    h = Harness()
    ids, gen = form_static(h)
    h.join(G, instance="i-b", protocols=(("range", b"more topics"),))
    assert h.state(G) == "PreparingRebalance"


def test_restart_after_the_session_timeout_rebalances_twice():
    h = Harness()
    ids, gen = form_static(h)
    for _ in range(3):  # i-b is down for longer than its session
        h.advance(SESSION_MS // 2)
        h.heartbeat(G, ids["i-a"], gen, instance="i-a")
    assert [m.member_id for m in h.c.describe_group(G).members] == [ids["i-a"]]
    assert h.state(G) == "PreparingRebalance"
    h.join(G, instance="i-b")  # comes back as a new member
    assert h.state(G) == "PreparingRebalance"


def test_failed_record_append_keeps_the_old_member_id():
    h = Harness()
    ids, gen = form_static(h)
    h.auto_commit = False
    j = h.join(G, instance="i-b")
    h.complete_appends(E.NOT_LEADER_OR_FOLLOWER)
    assert h.answer(j).error == E.NOT_COORDINATOR
    assert h.heartbeat(G, ids["i-b"], gen, instance="i-b") == E.NONE


def test_static_member_that_does_not_rejoin_stays_until_its_session_ends():
    h = Harness()
    ids, gen = form_static(h)
    h.join(G, ids["i-a"], instance="i-a")  # rebalance; i-b is slow but alive
    for _ in range(REBALANCE_MS // 5_000):
        assert h.heartbeat(G, ids["i-b"], gen, instance="i-b") == E.REBALANCE_IN_PROGRESS
        h.advance(5_000)
    # Dynamic members would be dropped here; a static one keeps its place in the generation.
    desc = h.c.describe_group(G)
    assert {m.member_id for m in desc.members} == set(ids.values())
    assert desc.state == "CompletingRebalance" and desc.generation_id == gen + 1
    assert h.heartbeat(G, ids["i-b"], gen, instance="i-b") == E.ILLEGAL_GENERATION
    rejoin = h.answer(h.join(G, ids["i-b"], instance="i-b"))
    assert rejoin.generation_id == gen + 1


def test_restart_during_completing_rebalance_fences_the_parked_sync_and_rebalances():
    h = Harness()
    ids, gen = form_static(h)
    h.join(G, ids["i-a"], instance="i-a")
    h.join(G, ids["i-b"], instance="i-b")
    assert h.state(G) == "CompletingRebalance"
    parked = h.sync(G, ids["i-b"], gen + 1, instance="i-b")
    h.join(G, instance="i-b")  # i-b restarted before its sync came back
    assert h.answer(parked).error == E.FENCED_INSTANCE_ID
    assert h.state(G) == "PreparingRebalance"


def test_admin_removes_a_static_member_by_instance_id():
    h = Harness()
    ids, gen = form_static(h)
    answer = h.leave(G, MemberIdentity("", "i-b"))
    assert answer.members[0][1] == E.NONE
    assert h.state(G) == "PreparingRebalance"
    assert h.heartbeat(G, ids["i-b"], gen, instance="i-b") == E.UNKNOWN_MEMBER_ID


def test_leave_with_a_stale_member_id_for_an_instance_is_fenced():
    h = Harness()
    ids, gen = form_static(h)
    old = ids["i-b"]
    h.join(G, instance="i-b")
    answer = h.leave(G, MemberIdentity(old, "i-b"))
    assert answer.members[0][1] == E.FENCED_INSTANCE_ID
    assert h.state(G) == "Stable"
