"""A follower whose fetch offset is below the leader's log start gets the snapshot id, fetches the
snapshot in chunks (FetchSnapshot), installs it, and then resumes ordinary fetching after it."""

from dataclasses import replace

from simulation import SIM_CONFIG, Simulation

from kraft.raft.messages import FetchRequest, FetchResponse, FetchSnapshotRequest


def test_a_follower_behind_the_log_start_catches_up_from_a_snapshot():
    sim = Simulation(
        seed=41,
        voters=3,
        observers=0,
        record_messages=True,
        config=replace(SIM_CONFIG, snapshot_interval_entries=10),
    )
    assert sim.run_until(lambda: sim.leader() is not None, 2000)
    leader = sim.leader()
    lagging = next(n for n in sim.nodes.values() if n is not leader)
    sim.crash(lagging.node_id)
    for _ in range(15):
        last = sim.propose(3)[1]
        sim.run_for(20)
    assert sim.run_until(lambda: sim.is_committed(last), 1000)
    assert leader.log.log_start_offset > lagging.log.log_end_offset
    snapshot_id = leader.log.latest_snapshot_id

    sent_before = len(sim.sent)
    sim.restart(lagging.node_id)
    assert sim.run_until(lambda: lagging.log.log_start_offset >= snapshot_id.offset, 2000)
    after = [m for _, m in sim.sent[sent_before:]]
    offered = [
        m.snapshot_id
        for m in after
        if isinstance(m, FetchResponse) and m.dst == lagging.node_id and m.snapshot_id
    ]
    chunks = [
        m.position
        for m in after
        if isinstance(m, FetchSnapshotRequest) and m.src == lagging.node_id
    ]
    assert offered and chunks[0] == 0 and len(chunks) >= 2, "the snapshot came in one chunk"

    more = sim.propose(2)[1]
    assert sim.run_until(
        lambda: lagging.core.high_watermark > more.offset and lagging.sm.count == leader.sm.count,
        2000,
    )
    assert lagging.sm == leader.sm
    resumed = [m for _, m in sim.sent if isinstance(m, FetchRequest) and m.src == lagging.node_id]
    assert resumed[-1].fetch_offset > snapshot_id.offset
