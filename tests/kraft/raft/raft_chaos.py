"""The randomised run every simulation seed does: faults of every kind (drops, duplicates, delays,
cuts one-way and both, splits, crashes, graceful resignations, requests answered "timed out",
dead nodes and one-way links refusing connections) under client load, then healing."""

from __future__ import annotations

import random

from simulation import Simulation

CHAOS_MS = 1500
LIVENESS_MS = 3000


def run_chaos(seed: int) -> Simulation:
    """Faults of every kind for CHAOS_MS, then heal everything and require a leader and a fresh
    commit within LIVENESS_MS. Raises InvariantViolation (naming the seed) on any failure."""
    plan = random.Random(seed * 7919 + 1)
    # Their own Random, so adding them left every other choice of the plan as it was.
    refusals = random.Random(seed * 131 + 3)
    sim = Simulation(
        seed,
        voters=plan.choice((3, 3, 5)),
        observers=plan.choice((1, 2)),
        drop=plan.choice((0.0, 0.02, 0.1)),
        duplicate=plan.choice((0.0, 0.05)),
        max_delay_ms=plan.choice((3, 8, 20)),
        timed_out=random.Random(seed * 31 + 7).choice((0.0, 0.0, 0.05)),
        refuse_dead=refusals.random() < 0.5,
    )
    node_ids = sorted(sim.nodes)
    voters = sorted(sim.voter_ids)

    def restart_later(node_id: int) -> None:
        sim.at(sim.now + plan.randint(30, 600), sim.restart, node_id)

    def crash(node_id: int) -> None:
        sim.crash(node_id)
        restart_later(node_id)

    def resign_leader() -> None:
        leader = sim.leader()
        if leader is not None:
            leader.core.resign(sim.now)
            sim.pump(leader)
            sim.at(sim.now + plan.randint(5, 40), crash, leader.node_id)

    def fault() -> None:
        kind = plan.randrange(8)
        leader = sim.leader()
        if kind == 0:
            sim.isolate(plan.choice(node_ids))
        elif kind == 1:
            a, b = plan.sample(node_ids, 2)
            # one-way: lost, or refused (a's Fetches to b fail at once while b runs on)
            (sim.refused if refusals.random() < 0.3 else sim.cut).add((a, b))
        elif kind == 2:
            sim.split(set(plan.sample(voters, len(voters) // 2)))
        elif kind == 3 and leader is not None:
            sim.isolate(leader.node_id, inbound=plan.random() < 0.5, outbound=True)
        elif kind == 4:
            crash(plan.choice(node_ids))
        elif kind == 5:
            resign_leader()
        else:
            sim.heal()

    t = 0
    while t < CHAOS_MS:
        t += plan.randint(15, 60)
        sim.at(t, sim.propose, plan.randint(1, 3))
    t = 0
    while t < CHAOS_MS:
        t += plan.randint(80, 400)
        sim.at(t, fault)
    sim.run_for(CHAOS_MS)

    sim.heal()
    sim.drop = sim.duplicate = 0.0
    for node_id in node_ids:
        sim.restart(node_id)
    healed_at = sim.now
    if not sim.run_until(lambda: sim.leader() is not None, LIVENESS_MS):
        sim.fail(f"no leader {LIVENESS_MS} ms after healing")
    # A proposal may land on a leader that is about to lose its epoch: retry until one commits.
    while True:
        proposed = sim.propose(1)
        left = LIVENESS_MS - (sim.now - healed_at)
        if left <= 0:
            sim.fail(f"no proposal committed within {LIVENESS_MS} ms after healing")
        if proposed is not None and sim.run_until(
            lambda: sim.is_committed(proposed[1]), min(left, 300)
        ):
            break
        if proposed is None:
            sim.run_for(min(left, 20))
    return sim
