"""The schedule's stable periods, as Jepsen's combined nemesis: each period enables a random
subset of the chosen nemeses, about a quarter enable none and never two in a row, every fault
starts inside a period that enables it; the executor hands the other nemeses to their injectors."""

from __future__ import annotations

import random

from chaos.nemesis import NEMESES, ClusterView, Executor, Fault, plan

VIEW = ClusterView(
    controllers=(1, 2, 3), brokers=(4, 5, 6), active_controller=2, leaders={0: 5, 1: 5, 2: 6}
)


def test_periods_tile_the_run_and_a_quarter_are_calm():
    periods = [p for seed in range(40) for p in plan(seed, 600, 5, NEMESES)[0]]
    calm = sum(1 for p in periods if not p.enabled) / len(periods)
    assert 0.18 < calm < 0.32, calm
    for seed in range(40):
        ps = plan(seed, 600, 5, NEMESES)[0]
        assert ps[0].start_s == 0 and ps[-1].end_s == 600
        assert all(a.end_s == b.start_s for a, b in zip(ps, ps[1:]))
        assert not any(not a.enabled and not b.enabled for a, b in zip(ps, ps[1:]))
    sizes = {len(p.enabled) for p in periods}
    assert sizes == set(range(len(NEMESES) + 1))  # from calm to everything at once


def test_a_fault_starts_in_a_period_that_enables_it():
    for seed in range(30):
        periods, faults = plan(seed, 300, 5, NEMESES)
        assert faults
        for f in faults:
            (home,) = [p for p in periods if p.start_s <= f.start_s < p.end_s]
            assert f.nemesis in home.enabled, (f, home)
        assert all(a.end_s < b.start_s for a, b in zip(faults, faults[1:]))


def test_the_mean_gap_follows_the_interval():
    for interval in (2, 5, 10):
        faults = plan(1, 4000, interval, ["kill"])[1]
        gaps = [b.start_s - a.end_s for a, b in zip(faults, faults[1:])]
        mean = sum(gaps) / len(gaps)
        assert 0.6 * interval < mean < 2 * interval, (interval, mean)


def test_every_nemesis_is_drawn_with_its_own_aim():
    faults = plan(5, 3000, 5, NEMESES)[1]
    assert {f.nemesis for f in faults} == set(NEMESES)
    assert all(
        f.role in ("broker", "leader") and f.count == "one"
        for f in faults
        if f.nemesis == "corrupt"
    )
    assert {f.kind for f in faults if f.nemesis == "clock"} == {"bump", "strobe"}
    assert {f.name for f in faults if f.nemesis == "clock"} == {"clock-bump", "clock-strobe"}


class Recording:
    def __init__(self):
        self.calls = []

    def begin(self, fault, hit, rng):
        self.calls.append(("begin", fault.nemesis, tuple(hit)))
        return "did it"

    def end(self, fault, hit):
        self.calls.append(("end", fault.nemesis, tuple(hit)))


def test_the_executor_hands_other_nemeses_to_their_injectors():
    now, written, lines = [0], [], []

    def clock():
        now[0] += 10**8
        return now[0]

    net = Recording()
    ex = Executor(
        None,
        None,
        lambda: VIEW,
        clock,
        written.append,
        lines.append,
        seed=1,
        injectors={"net": net},
    )
    ex.run([Fault("net", "", "leader", "one", 1, 2)])
    (leader,) = {c[2] for c in net.calls}
    assert net.calls == [("begin", "net", leader), ("end", "net", leader)]
    assert leader[0] in (5, 6) and [w.nemesis for w in written] == ["net"]
    assert any("did it" in line for line in lines)
    try:
        ex.begin(Fault("clock", "bump", "any", "one", 1, 2), random.Random(0))
    except ValueError as exc:
        assert "no injector" in str(exc)
    else:
        raise AssertionError("a nemesis without an injector must be refused")
