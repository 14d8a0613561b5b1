"""The pure pieces of authentication on a fake clock: a session token works only for its host and
until its lifetime ends; failed attempts lock a host out for the rest of the window, others not."""

from __future__ import annotations

from broker.security.sessions import SessionTable
from broker.security.throttle import FailedAuthThrottle


def test_a_session_is_bound_to_its_host_and_lifetime():
    table = SessionTable(lifetime_ms=1_000, max_sessions=2)
    token, lifetime = table.create("User:alice", "10.0.0.1", now_ms=0)
    assert lifetime == 1_000
    assert table.principal(token, "10.0.0.1", 999) == "User:alice"
    assert table.principal(token, "10.0.0.2", 10) is None  # stolen: another host
    assert table.principal(token + "x", "10.0.0.1", 10) is None
    assert table.principal(token, "10.0.0.1", 1_000) is None  # expired
    table.expire(1_000)
    assert len(table) == 0
    first, _ = table.create("User:a", "h", 0)
    table.create("User:b", "h", 1)
    table.create("User:c", "h", 2)  # full: the oldest goes
    assert table.principal(first, "h", 3) is None and len(table) == 2


def test_failures_lock_out_their_host_for_the_window():
    throttle = FailedAuthThrottle(max_failures=3, window_ms=60_000)
    for now in (0, 10_000, 20_000):
        assert throttle.blocked_ms("h", now) == 0
        throttle.failed("h", now)
    assert throttle.blocked_ms("h", 20_000) == 40_000
    assert throttle.blocked_ms("other", 20_000) == 0
    assert throttle.blocked_ms("h", 60_000) == 0  # the first failure aged out
    throttle.failed("h", 60_000)
    assert throttle.blocked_ms("h", 60_001) == 9_999
    throttle.succeeded("h")
    assert throttle.blocked_ms("h", 60_001) == 0
