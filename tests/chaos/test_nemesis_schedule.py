"""The nemesis schedule is pure data from a seed: the same seed gives the same faults, every fault
ends before the quiet period, and roles resolve to the nodes that hold them."""

from __future__ import annotations

import random

import pytest

from chaos.nemesis import (
    NEMESES,
    PARTITIONS,
    ClusterView,
    Executor,
    Fault,
    grudge,
    how_many,
    members,
    schedule,
    targets,
)

VIEW = ClusterView(
    controllers=(1, 2, 3), brokers=(4, 5, 6), active_controller=2, leaders={0: 5, 1: 5, 2: 6}
)


def test_same_seed_same_schedule_and_another_seed_differs():
    a = schedule(7, 120, 5, NEMESES)
    assert a == schedule(7, 120, 5, NEMESES)
    assert a != schedule(8, 120, 5, NEMESES)
    assert len(a) >= 5


@pytest.mark.parametrize("seed", range(50))
def test_every_fault_ends_within_the_faulty_phase_one_at_a_time(seed):
    faults = schedule(seed, 60, 5, NEMESES)
    assert faults, "a 60 s run with 5 s intervals has faults"
    for f in faults:
        assert 0 < f.start_s < f.end_s <= 60, f
    for before, after in zip(faults, faults[1:]):
        assert before.end_s < after.start_s


def test_only_the_chosen_nemeses_are_drawn():
    faults = schedule(3, 600, 5, ["pause"])
    assert {f.nemesis for f in faults} == {"pause"}
    assert {f.kind for f in schedule(3, 3000, 5, ["partition"])} == set(PARTITIONS)


def test_unknown_nemesis_is_refused():
    with pytest.raises(ValueError, match="choose from"):
        schedule(1, 60, 5, ["flood"])


def test_roles_resolve_to_the_nodes_holding_them():
    rng = random.Random(0)
    assert members("controller", VIEW, rng) == [1, 2, 3]
    assert members("broker", VIEW, rng) == [4, 5, 6]
    assert members("active-controller", VIEW, rng) == [2]
    assert members("leader", VIEW, rng)[0] in (5, 6)
    assert members("any", VIEW, rng) == [1, 2, 3, 4, 5, 6]


def test_unknown_leaders_fall_back_to_a_node_of_that_kind():
    view = ClusterView((1, 2, 3), (4, 5, 6), active_controller=None, leaders={})
    for seed in range(20):
        assert members("active-controller", view, random.Random(seed))[0] in (1, 2, 3)
        assert members("leader", view, random.Random(seed))[0] in (4, 5, 6)


@pytest.mark.parametrize(
    "count,group,expected",
    [
        ("one", 3, 1),
        ("minority", 3, 1),
        ("majority", 3, 2),
        ("all", 3, 3),
        ("minority", 6, 2),
        ("majority", 6, 4),
    ],
)
def test_counts(count, group, expected):
    assert how_many(count, group) == expected


def test_kill_targets_are_the_role_sized_by_count():
    f = Fault("kill", "", "controller", "majority", 1, 2)
    for seed in range(20):
        hit = targets(f, VIEW, random.Random(seed))
        assert len(hit) == 2 and set(hit) <= {1, 2, 3}
    assert targets(
        Fault("pause", "", "active-controller", "one", 1, 2), VIEW, random.Random(0)
    ) == [2]


def test_isolating_the_leader_cuts_it_from_everyone_both_ways():
    cut = grudge(Fault("partition", "isolate", "leader", "one", 1, 2), VIEW, random.Random(1))
    (lone,) = [n for n, peers in cut.items() if len(peers) == 5]
    assert lone in (5, 6)
    assert all(peers == {lone} for n, peers in cut.items() if n != lone)


def test_active_controller_is_cut_from_the_other_voters_only():
    cut = grudge(
        Fault("partition", "active-controller", "active-controller", "one", 1, 2),
        VIEW,
        random.Random(0),
    )
    assert cut == {2: {1, 3}, 1: {2}, 3: {2}}


def test_brokers_cut_from_controllers():
    cut = grudge(
        Fault("partition", "brokers-controllers", "broker", "all", 1, 2), VIEW, random.Random(0)
    )
    assert cut == {
        4: {1, 2, 3},
        5: {1, 2, 3},
        6: {1, 2, 3},
        1: {4, 5, 6},
        2: {4, 5, 6},
        3: {4, 5, 6},
    }


def test_halves_keep_a_controller_majority_on_one_side():
    for seed in range(20):
        cut = grudge(Fault("partition", "halves", "any", "all", 1, 2), VIEW, random.Random(seed))
        sides = {frozenset({n} | set(range(1, 7)) - peers) for n, peers in cut.items()}
        assert len(sides) == 2
        assert sorted(len(s & {1, 2, 3}) for s in sides) == [1, 2]


def test_majorities_ring_every_node_hears_a_majority_and_no_two_the_same():
    cut = grudge(Fault("partition", "ring", "any", "all", 1, 2), VIEW, random.Random(4))
    heard = {n: frozenset(set(range(1, 7)) - cut[n]) for n in range(1, 7)}
    assert all(len(h) == 4 and n in h for n, h in heard.items())
    assert len(set(heard.values())) == 6


class FakeCluster:
    def __init__(self):
        self.calls = []

    def kill(self, n):
        self.calls.append(("kill", n))

    def start(self, n, why=""):
        self.calls.append(("start", n))
        return 1

    def pause(self, n):
        self.calls.append(("pause", n))

    def resume(self, n):
        self.calls.append(("resume", n))

    def alive(self, n):
        return True


class FakeNetwork:
    def __init__(self):
        self.calls = []

    def apply(self, g):
        self.calls.append(("apply", g))

    def heal(self):
        self.calls.append(("heal",))


def test_executor_undoes_each_fault_and_logs_its_window():
    now = [0]
    cluster, network, written = FakeCluster(), FakeNetwork(), []

    def clock():
        now[0] += 10**8  # each reading advances 0.1 s: no real sleeps
        return now[0]

    ex = Executor(cluster, network, lambda: VIEW, clock, written.append, lambda line: None, seed=1)
    ex.run(
        [
            Fault("kill", "", "active-controller", "one", 1, 2),
            Fault("partition", "active-controller", "active-controller", "one", 3, 4),
        ]
    )
    assert cluster.calls == [("kill", 2), ("start", 2)]
    assert network.calls == [("apply", {2: {1, 3}, 1: {2}, 3: {2}}), ("heal",)]
    assert [(w.nemesis, w.targets) for w in written] == [
        ("kill", (2,)),
        ("partition-active-controller", (1, 2, 3)),
    ]
    assert all(w.start < w.end for w in written)
