"""Every transition of the group state machine, one table row each: the start state, the event,
the state and generation after it (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead)."""

from dataclasses import replace

import pytest
from group_harness import CONFIG, REBALANCE_MS, SESSION_MS, Harness

from broker.group.messages import GroupConfig
from clients.errors import ErrorCode

G = "orders-app"


# -- start states: each returns the harness and what the events need ----------------------------
def stable(n=2):
    h = Harness()
    members, gen = h.form_group(G, n)
    return h, {"members": members, "gen": gen}


def completing():
    """Two members joined generation g; nobody has synced yet."""
    h, ctx = stable()
    a, b = ctx["members"]
    h.join(G, a)  # the leader rejoins: a new rebalance
    ja = h.join(G, a)
    jb = h.join(G, b)
    assert h.state(G) == "CompletingRebalance"
    return h, {"members": [a, b], "gen": h.answer(jb).generation_id, "ja": ja, "jb": jb}


def preparing():
    """Stable with two members, then a third joins: the old two have not rejoined yet."""
    h, ctx = stable()
    ctx["newcomer_join"] = h.join_new(G)
    assert h.state(G) == "PreparingRebalance"
    return h, ctx


# -- events ---------------------------------------------------------------------------------------
def new_member_joins(h, ctx):
    h.join_new(G)


def member_leaves(h, ctx):
    assert h.leave(G, ctx["members"][1]).members[0][1] == ErrorCode.NONE


def session_expires(h, ctx):
    for _ in range(3):  # the first member keeps heartbeating
        h.advance(SESSION_MS // 2)
        h.heartbeat(G, ctx["members"][0], ctx["gen"])


def leader_rejoins_unchanged(h, ctx):
    h.join(G, ctx["members"][0])


def follower_rejoins_changed(h, ctx):
    h.join(G, ctx["members"][1], protocols=(("range", b"other topics"),))


def follower_rejoins_unchanged(h, ctx):
    answer = h.answer(h.join(G, ctx["members"][1]))
    assert answer.error == ErrorCode.NONE and answer.generation_id == ctx["gen"]
    assert answer.members == ()  # only the leader gets the member list


def leader_syncs(h, ctx):
    leader, follower = ctx["members"]
    fs = h.sync(G, follower, ctx["gen"])
    assert h.answer(fs) is None  # parked until the leader's assignment is stored
    h.sync(G, leader, ctx["gen"], {leader: b"A", follower: b"B"})
    assert h.answer(fs).assignment == b"B"


def newcomer_joins_while_completing(h, ctx):
    parked = h.sync(G, ctx["members"][1], ctx["gen"])
    h.join_new(G)
    assert h.answer(parked).error == ErrorCode.REBALANCE_IN_PROGRESS


def nobody_syncs_in_time(h, ctx):
    h.advance(REBALANCE_MS)


def follower_heartbeats_but_never_syncs(h, ctx):
    leader, follower = ctx["members"]
    h.sync(G, leader, ctx["gen"], {leader: b"A", follower: b"B"})
    assert h.state(G) == "Stable"
    for _ in range(REBALANCE_MS // 5_000 - 1):  # alive, but it never asked for its partitions
        h.advance(5_000)
        assert h.heartbeat(G, leader, ctx["gen"]) == ErrorCode.NONE
        assert h.heartbeat(G, follower, ctx["gen"]) == ErrorCode.NONE
    h.advance(5_000)
    assert [m.member_id for m in h.c.describe_group(G).members] == [leader]


def everyone_rejoins(h, ctx):
    for m in ctx["members"]:
        h.join(G, m)


def rebalance_timeout_passes(h, ctx):
    h.join(G, ctx["members"][0])  # the second old member never rejoins
    h.heartbeat(G, ctx["members"][1], ctx["gen"])
    h.advance(REBALANCE_MS)


def all_leave(h, ctx):
    newcomer = h.answer(ctx["newcomer_join"])
    assert newcomer is None
    desc = h.c.describe_group(G)
    h.leave(G, *[m.member_id for m in desc.members])


def resign(h, ctx):
    h.run(h.c.resign())


TABLE = [
    # start, event, state after, generation change
    (stable, new_member_joins, "PreparingRebalance", 0),
    (stable, member_leaves, "PreparingRebalance", 0),
    (stable, session_expires, "PreparingRebalance", 0),
    (stable, leader_rejoins_unchanged, "PreparingRebalance", 0),
    (stable, follower_rejoins_changed, "PreparingRebalance", 0),
    (stable, follower_rejoins_unchanged, "Stable", 0),
    (completing, leader_syncs, "Stable", 0),
    (completing, newcomer_joins_while_completing, "PreparingRebalance", 0),
    (completing, nobody_syncs_in_time, "Empty", 1),
    (completing, follower_heartbeats_but_never_syncs, "PreparingRebalance", 0),
    (preparing, everyone_rejoins, "CompletingRebalance", 1),
    (preparing, rebalance_timeout_passes, "CompletingRebalance", 1),
    (preparing, all_leave, "Empty", 1),
    (stable, resign, "Dead", None),
]


@pytest.mark.parametrize(
    "start, event, after, generation_change",
    TABLE,
    ids=[f"{s.__name__}-{e.__name__}" for s, e, _, _ in TABLE],
)
def test_transition(start, event, after, generation_change):
    h, ctx = start()
    before = h.generation(G)
    event(h, ctx)
    if after == "Dead":
        assert h.c.describe_group(G).error == ErrorCode.NOT_COORDINATOR
        return
    assert h.state(G) == after
    assert h.generation(G) - before == generation_change


def test_first_join_waits_the_initial_rebalance_delay_and_gathers_later_joiners():
    h = Harness(replace(CONFIG, initial_rebalance_delay_ms=3_000))
    first = h.join(G, instance="i-1")
    assert h.state(G) == "PreparingRebalance" and h.answer(first) is None
    h.advance(2_000)
    second = h.join(G, instance="i-2")  # a new member extends the delay once more
    h.advance(1_000)
    assert h.answer(first) is None and h.state(G) == "PreparingRebalance"
    h.advance(3_000)
    a, b = h.answer(first), h.answer(second)
    assert a.generation_id == b.generation_id == 1
    assert {m.member_id for m in a.members} == {a.member_id, b.member_id}
    assert h.state(G) == "CompletingRebalance"


def test_initial_delay_never_passes_the_rebalance_timeout():
    h = Harness(replace(CONFIG, initial_rebalance_delay_ms=3_000))
    first = h.join(G, instance="i-0", rebalance=7_000)
    for i in range(1, 10):  # a joiner every second
        h.advance(1_000)
        if h.answer(first) is not None:
            break
        h.join(G, instance=f"i-{i}", rebalance=7_000)
    assert h.answer(first) is not None and h.now <= 7_000


def test_join_to_empty_completes_at_once_when_everyone_is_in():
    h = Harness()
    answer = h.answer(h.join_new(G))
    assert (answer.error, answer.generation_id, answer.leader) == (
        ErrorCode.NONE,
        1,
        answer.member_id,
    )
    assert h.state(G) == "CompletingRebalance"


def test_empty_after_everyone_left_is_recorded_and_rejoinable():
    h, ctx = stable()
    h.leave(G, *ctx["members"])
    assert (h.state(G), h.generation(G)) == ("Empty", ctx["gen"] + 1)
    assert h.fresh().describe_group(G) == h.c.describe_group(G)
    answer = h.answer(h.join_new(G))
    assert answer.generation_id == ctx["gen"] + 2


def test_unknown_group_is_described_as_dead():
    h = Harness()
    assert h.c.describe_group("nobody").state == "Dead"
    assert h.c.list_groups().groups == ()


def test_list_groups_filters_by_state():
    h, _ = stable()
    h.commit("offsets-only", {("t", 0): 5})
    listed = {g.group_id: (g.state, g.protocol_type) for g in h.c.list_groups().groups}
    assert listed == {G: ("Stable", "consumer"), "offsets-only": ("Empty", "")}
    assert [g.group_id for g in h.c.list_groups(("Empty",)).groups] == ["offsets-only"]


def test_config_with_other_delay_is_honoured_per_coordinator():
    assert GroupConfig().initial_rebalance_delay_ms == 3_000  # Kafka's default
