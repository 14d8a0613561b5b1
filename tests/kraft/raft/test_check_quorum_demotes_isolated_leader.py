"""Check-quorum: a leader that hears no fetch from a majority for 1.5 x fetch timeout resigns, so a
partitioned leader stops accepting writes instead of leading forever."""

from simulation import Simulation

from clients.errors import ErrorCode


def test_check_quorum_demotes_an_isolated_leader():
    sim = Simulation(seed=5, voters=3, observers=1)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    old = sim.leader()
    cut_at = sim.now
    sim.isolate(old.node_id)

    assert sim.run_until(lambda: not old.core.is_leader, 4 * sim.config.fetch_timeout_ms)
    limit = sim.config.check_quorum_timeout_ms
    assert sim.now - cut_at <= limit + sim.config.fetch_max_wait_ms, "resigned too late"
    assert sim.now - cut_at >= limit - sim.config.fetch_timeout_ms, "resigned too early"
    assert old.core.propose([b"x"], sim.now) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # The majority side elected someone else meanwhile.
    assert sim.run_until(lambda: sim.leader() not in (None, old), 2000)


def test_a_leader_with_its_followers_stays_leader():
    sim = Simulation(seed=5, voters=3, observers=0)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    leader = sim.leader()
    sim.run_for(20 * sim.config.check_quorum_timeout_ms)
    assert sim.leader() is leader and leader.core.epoch == max(sim.leaders)
