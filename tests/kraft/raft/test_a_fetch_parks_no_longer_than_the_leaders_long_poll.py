"""A Fetch asking to be parked for days (max_wait_ms at the end of int32) is answered once the
leader's own fetch_max_wait_ms has passed: each parked fetch keeps a call open on the leader."""

from forged_requests import settled

from kraft.raft.messages import FetchRequest, FetchResponse


def test_a_fetch_parks_no_longer_than_the_leaders_long_poll():
    sim = settled()
    leader = sim.leader()
    core = leader.core
    sent = len(sim.sent)
    core.step(
        FetchRequest(
            7,
            leader.node_id,
            core.epoch,
            leader.log.log_end_offset,
            leader.log.last_fetched_epoch,
            request_id=1,
            max_wait_ms=2**31 - 1,
            known_high_watermark=core.high_watermark,
        ),
        sim.now,
    )
    sim.pump(leader)
    asked = sim.now
    assert sim.run_until(
        lambda: any(isinstance(m, FetchResponse) and m.dst == 7 for _, m in sim.sent[sent:]), 10_000
    )
    assert sim.now - asked <= sim.config.fetch_max_wait_ms
