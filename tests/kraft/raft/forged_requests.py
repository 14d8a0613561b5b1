"""Helpers for tests that hand one forged request to one node of a settled simulated quorum and
check what it answered and that nothing (role, epoch, vote, leader, quorum-state) changed."""

from __future__ import annotations

from simulation import Simulation


def settled(seed: int = 5) -> Simulation:
    """Voters 1-3 and observer 4, a leader elected and everyone fetching from it."""
    sim = Simulation(seed=seed, voters=3, observers=1, record_messages=True)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(300)
    return sim


def state(node) -> tuple:
    """Everything a request could change on `node`, store writes included."""
    core = node.core
    return (
        core.role,
        core.epoch,
        core.voted_for,
        core.leader_id,
        node.store.read(),
        node.store.writes,
    )


def deliver(sim: Simulation, node, message):
    """Step `message` into `node` and return the answer it sends back."""
    sent = len(sim.sent)
    node.core.step(message, sim.now)
    sim.pump(node)
    kind = type(message).__name__.replace("Request", "Response")
    [answer] = [m for _, m in sim.sent[sent:] if m.dst == message.src and type(m).__name__ == kind]
    return answer
