"""KIP-101/KIP-595 truncation: a deposed leader with an uncommitted tail from its old epoch learns
the diverging epoch from the new leader, truncates to that epoch's end offset and converges."""

from dataclasses import replace

from simulation import SIM_CONFIG, Simulation

from kraft.raft.messages import FetchResponse


def test_a_follower_truncates_an_old_epoch_tail_to_the_diverging_epoch_end_offset():
    sim = Simulation(
        seed=31,
        voters=3,
        observers=0,
        record_messages=True,
        config=replace(SIM_CONFIG, snapshot_interval_entries=0),
    )
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    old = sim.leader()
    old_epoch = old.core.epoch
    committed = sim.propose(2)[1]
    assert sim.run_until(lambda: sim.is_committed(committed), 1000)

    sim.isolate(old.node_id)
    old.core.propose([b"lost-1", b"lost-2", b"lost-3"], sim.now)  # can never commit
    sim.pump(old)
    tail_start = committed.offset + 1
    assert sim.run_until(lambda: sim.leader() not in (None, old), 3000)
    new = sim.leader()
    kept = sim.propose(2)[1]
    assert sim.run_until(lambda: sim.is_committed(kept), 1000)
    assert [e.payload for e in old.log.read(tail_start, 10)] == [b"lost-1", b"lost-2", b"lost-3"]

    truncations = []
    real_truncate = old.log.truncate_to
    old.log.truncate_to = lambda offset: (truncations.append(offset), real_truncate(offset))
    sim.heal()
    assert sim.run_until(
        lambda: (
            old.log.log_end_offset == new.log.log_end_offset
            and old.core.high_watermark == new.core.high_watermark
        ),
        3000,
    )

    diverging = [
        m.diverging_epoch
        for _, m in sim.sent
        if isinstance(m, FetchResponse) and m.dst == old.node_id and m.diverging_epoch
    ]
    assert diverging and diverging[0].epoch == old_epoch
    assert (
        diverging[0].end_offset == tail_start == new.log.end_offset_for_epoch(old_epoch).end_offset
    )
    assert truncations[0] == tail_start
    assert old.log.entries() == new.log.entries()
    assert not any(e.payload.startswith(b"lost") for e in old.log.entries())
