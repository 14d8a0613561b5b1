"""Pre-vote (KIP-996): a voter cut off for many election timeouts keeps its epoch, and when it
comes back the leader and the epoch are unchanged."""

from simulation import Simulation


def test_prevote_stops_a_rejoining_node_from_disrupting_the_leader():
    sim = Simulation(seed=11, voters=3, observers=0)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(300)
    leader = sim.leader()
    epoch = leader.core.epoch
    outcast = next(n for n in sim.nodes.values() if n is not leader)
    assert outcast.core.leader_id == leader.node_id and outcast.core.epoch == epoch

    sim.isolate(outcast.node_id)
    sim.run_for(10 * sim.config.election_timeout_ms)
    assert outcast.core.role in ("Prospective", "Follower")
    assert outcast.core.epoch == epoch, "an isolated voter bumped its epoch: pre-vote is off"

    sim.heal()
    sim.run_for(5 * sim.config.fetch_timeout_ms)
    assert sim.leader() is leader
    assert {n.core.epoch for n in sim.nodes.values()} == {epoch}
    assert outcast.core.role == "Follower" and outcast.core.leader_id == leader.node_id
