"""The coordinator's clocks: session.timeout.ms, the rebalance timeout (the members'
max.poll.interval.ms), the pending-SyncGroup deadline, MEMBER_ID_REQUIRED and new-member expiry."""

from group_harness import REBALANCE_MS, SESSION_MS, Harness

from clients.errors import ErrorCode as E

G = "timers"


def test_rebalance_timeout_drops_dynamic_members_that_did_not_rejoin():
    h = Harness()
    long_session = 2 * REBALANCE_MS  # so the rebalance timeout, not the session, ends c
    (a, b, c), gen = h.form_group(G, 3, session=long_session)
    ja = h.join(G, a, session=long_session)
    jb = h.join(G, b, session=long_session)  # c stays silent
    h.advance(REBALANCE_MS - 1)
    assert h.answer(ja) is None and h.state(G) == "PreparingRebalance"
    h.advance(1)
    assert h.answer(ja).generation_id == h.answer(jb).generation_id == gen + 1
    assert {m.member_id for m in h.answer(ja).members} | {
        m.member_id for m in h.answer(jb).members
    } == {a, b}
    assert [m.member_id for m in h.c.describe_group(G).members] == sorted([a, b])
    assert h.heartbeat(G, c, gen) == E.UNKNOWN_MEMBER_ID


def test_max_poll_interval_expiry_drops_a_member_whose_heartbeats_still_arrive():
    """The consumer's heartbeat thread keeps its session alive while poll() is stuck; the
    rebalance timeout it sent (its max.poll.interval.ms) is what removes it."""
    h = Harness()
    max_poll = 20_000
    (a, b), gen = h.form_group(G, 2, rebalance=max_poll)
    ja = h.join(G, a, rebalance=max_poll)
    for _ in range(max_poll // 5_000 - 1):
        h.advance(5_000)
        assert h.heartbeat(G, b, gen) == E.REBALANCE_IN_PROGRESS  # alive, not polling
    h.advance(5_000)
    answer = h.answer(ja)
    assert answer.generation_id == gen + 1 and [m.member_id for m in answer.members] == [a]
    assert h.heartbeat(G, b, gen) == E.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_a_silent_member_and_rebalances():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    h.advance(SESSION_MS - 1)
    assert h.heartbeat(G, a, gen) == E.NONE
    h.advance(1)
    assert [m.member_id for m in h.c.describe_group(G).members] == [a]
    assert h.state(G) == "PreparingRebalance"
    assert h.heartbeat(G, a, gen) == E.REBALANCE_IN_PROGRESS


def test_offset_commits_count_as_liveness():
    h = Harness()
    (a,), gen = h.form_group(G, 1)
    for i in range(4):
        h.advance(SESSION_MS // 2)
        h.commit(G, {("t", 0): i}, gen, a)
    assert h.state(G) == "Stable"


def test_a_member_parked_in_a_join_is_not_expired_by_its_session():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    ja = h.join(G, a)
    for _ in range(5):  # b heartbeats; a just waits in its JoinGroup
        h.advance(SESSION_MS // 2)
        h.heartbeat(G, b, gen)
    assert h.answer(ja) is None
    assert a in [m.member_id for m in h.c.describe_group(G).members]
    # Its passed session is no deadline: a driver ticking on next_deadline_ms would spin.
    assert h.c.next_deadline_ms() > h.now


def test_member_id_required_member_that_never_returns_expires_and_unblocks_the_join():
    h = Harness()
    (a,), gen = h.form_group(G, 1)
    assert h.answer(h.join(G)).error == E.MEMBER_ID_REQUIRED
    ja = h.join(G, a)  # a rejoins; the pending member holds the join
    assert h.answer(ja) is None
    h.advance(SESSION_MS)
    assert h.answer(ja).generation_id == gen + 1
    assert h.c.next_deadline_ms() is not None


def test_new_member_parked_too_long_is_answered_unknown_member():
    h = Harness()
    long = 600_000  # an old member that may take 10 minutes to rejoin
    (a,), gen = h.form_group(G, 1, rebalance=long)
    newcomer = h.join_new(G, rebalance=long)
    for _ in range(300_000 // 5_000):
        h.advance(5_000)
        h.heartbeat(G, a, gen)
    assert h.answer(newcomer).error == E.UNKNOWN_MEMBER_ID  # Kafka's NewMemberJoinTimeout


def test_next_deadline_is_the_earliest_timer():
    h = Harness()
    assert h.c.next_deadline_ms() is None
    (a, b), gen = h.form_group(G, 2)
    assert h.c.next_deadline_ms() == h.now + SESSION_MS
    h.join(G, a)
    assert h.c.next_deadline_ms() == h.now + SESSION_MS  # b's session before the rebalance


def test_tick_before_any_deadline_changes_nothing():
    h = Harness()
    h.form_group(G, 2)
    before = h.c.describe_group(G)
    assert h.c.tick(h.now + 1) == ()
    assert h.c.describe_group(G) == before
