"""When the leader's process is gone its port refuses connections, and the voters' fetches fail
at once: they elect within a few retry backoffs instead of waiting out the fetch timeout. A
voter that alone cannot reach a live leader moves no epoch (pre-vote: the others still reach it)
and does not spin."""

from simulation import Simulation


def _time_to_new_leader(refuse_dead: bool, seed: int) -> tuple[int, int]:
    """(ms from the crash to a new leader, epochs it moved)."""
    sim = Simulation(seed=seed, voters=3, observers=1, refuse_dead=refuse_dead)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(200)
    old = sim.leader()
    epoch, start = old.core.epoch, sim.now
    sim.crash(old.node_id)
    assert sim.run_until(lambda: sim.leader() not in (None, old), 5000)
    return sim.now - start, sim.leader().core.epoch - epoch


def test_a_refused_fetch_elects_far_sooner_than_the_fetch_timeout():
    config = Simulation(seed=0).config
    for seed in range(20):
        refused, epochs = _time_to_new_leader(refuse_dead=True, seed=seed)
        timed_out, _ = _time_to_new_leader(refuse_dead=False, seed=seed)
        assert timed_out >= config.fetch_timeout_ms - config.fetch_max_wait_ms
        # retry.backoff.ms, then pre-vote, vote and the fsyncs between: tens of ms.
        assert refused <= 5 * config.retry_backoff_ms + 40, (seed, refused)
        assert epochs == 1, (seed, epochs)  # the ranked voter stands alone: no split vote


def test_one_voter_refused_by_a_live_leader_moves_no_epoch_and_does_not_spin():
    sim = Simulation(seed=5, voters=3, observers=1, record_messages=True)
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    sim.run_for(200)
    leader = sim.leader()
    epoch = leader.core.epoch
    follower = min(i for i in sim.voter_ids if i != leader.node_id)
    sim.refused.add((follower, leader.node_id))
    sent_before, start = len(sim.sent), sim.now
    committed = [sim.propose(1) for _ in range(5)]
    sim.run_for(2000)
    assert sim.leader() is leader and leader.core.epoch == epoch
    assert all(sim.is_committed(p[1]) for p in committed if p is not None)
    from_follower = [m for t, m in sim.sent[sent_before:] if m.src == follower]
    # A pre-vote round and a fetch per retry backoff at most: no busy loop.
    assert len(from_follower) <= 4 * (sim.now - start) // sim.config.retry_backoff_ms
