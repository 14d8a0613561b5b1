"""A leader that shuts down gracefully sends EndQuorumEpoch; its followers elect at once instead of
waiting out the fetch timeout, the most caught-up first."""

from simulation import Simulation


def _time_to_new_leader(graceful: bool) -> int:
    sim = Simulation(seed=3, voters=3, observers=1)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(200)
    old = sim.leader()
    if graceful:
        old.core.resign(sim.now)
        sim.pump(old)
        sim.run_for(10)  # let EndQuorumEpoch leave before the process exits
    start = sim.now
    sim.crash(old.node_id)
    assert sim.run_until(lambda: sim.leader() not in (None, old), 5000)
    return sim.now - start


def test_end_quorum_epoch_makes_followers_elect_quickly():
    graceful = _time_to_new_leader(graceful=True)
    crashed = _time_to_new_leader(graceful=False)
    config = Simulation(seed=0).config
    assert crashed >= config.fetch_timeout_ms - config.fetch_max_wait_ms
    assert graceful < config.fetch_timeout_ms // 3, (graceful, crashed)
