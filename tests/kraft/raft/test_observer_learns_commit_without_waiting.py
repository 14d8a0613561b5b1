"""KIP-1166: a caught-up observer (a broker) whose fetch names an older high watermark than the
leader's is answered at once, not parked for fetch_max_wait_ms. Without it a broker learned of
about half the commits a full long-poll late (measured: 250 ms of a 1.6 s partition failover)."""

from simulation import Simulation


def commit_to_observer_delays(seed: int, proposals: int = 40) -> list[int]:
    """For each proposal: ms from the leader's commit to the observer's knowing of it."""
    sim = Simulation(seed=seed, voters=3, observers=1)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(300)  # the observer finds the leader and catches up
    observer = next(n for n in sim.nodes.values() if not n.voter)
    delays = []
    for _ in range(proposals):
        leader, position = sim.propose(1)
        assert sim.run_until(lambda: leader.core.high_watermark > position.offset, 500)
        committed_at = sim.now
        assert sim.run_until(lambda: observer.core.high_watermark > position.offset, 500)
        delays.append(sim.now - committed_at)
        sim.run_for(sim.rng.randint(0, 30))
    return delays


def test_a_caught_up_observer_learns_each_commit_within_a_round_trip():
    delays = [d for seed in (1, 2, 3) for d in commit_to_observer_delays(seed)]
    long_poll = Simulation(seed=0).config.fetch_max_wait_ms
    # Network delays are 1-8 ms each way: a fetch in flight plus one round trip at most.
    assert max(delays) <= 4 * 8 < long_poll, sorted(delays)[-5:]
