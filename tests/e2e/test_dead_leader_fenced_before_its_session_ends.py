"""kill -9 of a partition's leader: its followers see their fetches refused, say so in their next
heartbeat (sent at once), the controller finds nothing listening at the dead broker's address and
fences it, so a new leader takes acks=all writes long before the dead broker's session (60 s
here) would have ended."""

from __future__ import annotations

import time

import pytest
from test_replication_failover import partition_state, replicated_topic
from waiting import eventually

from clients.producer import Producer

pytestmark = pytest.mark.e2e

SESSION_MS = 60_000
SETTINGS = dict(
    broker_session_timeout_ms=str(SESSION_MS),
    broker_heartbeat_interval_ms="300",
    replica_lag_time_max_ms="3000",
    auto_leader_rebalance_enable="false",
)


def test_a_killed_leader_is_fenced_without_waiting_for_its_session(cluster_factory):
    cluster = cluster_factory(1, 3, **SETTINGS)
    by_id = {b.node_id: b for b in cluster.brokers}
    first = replicated_topic(cluster, "fast")
    with Producer(
        cluster.bootstrap,
        acks=-1,
        request_timeout_ms=2000,
        retry_backoff_ms=50,
        delivery_timeout_ms=60_000,
    ) as producer:
        producer.send("fast", b"before").result(30)
        by_id[first.leader].kill9()
        killed = time.monotonic()
        survivor = next(b.address for b in cluster.brokers if b.node_id != first.leader)
        eventually(
            lambda: (p := partition_state(survivor, "fast")) and p.leader not in (-1, first.leader),
            20,
            "a new leader",
        )
        producer.send("fast", b"after").result(30)
        took = time.monotonic() - killed
    assert took < SESSION_MS / 4000, f"{took:.1f} s: the session, not the report, fenced it"
    log = cluster.controllers[0].log_path.read_text()
    assert f"fencing broker {first.leader}: reported unreachable" in log
