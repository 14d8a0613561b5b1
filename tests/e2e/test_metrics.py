"""Metrics with real node processes (1 controller, 3 brokers, each with metrics.listener): every
metric docs/metrics.md lists is served by some node, and the numbers move when they should: a
produce moves bytes-in and records-in, a new group the group count, a killed follower
under-replicated partitions and the fenced broker count."""

from __future__ import annotations

import pathlib
import re
import time

import pytest
from processes import free_port
from test_replication_failover import FAST, partition_state
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.metrics_view import one, scrape, total
from clients.producer import Producer

pytestmark = pytest.mark.e2e

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def documented() -> list[str]:
    names = re.findall(r"^\| `([a-z_]+)` \|", DOC.read_text(), re.MULTILINE)
    assert len(names) > 30, names
    return names


def family(sample: str) -> str:
    return re.sub(r"_(total|bucket|sum|count)$", "", sample)


def test_every_documented_metric_is_served_and_moves(cluster_factory):
    metrics = {i: f"127.0.0.1:{free_port()}" for i in range(1, 5)}
    cluster = cluster_factory(
        1,
        3,
        node_overrides={i: {"metrics.listener": f"http://{a}"} for i, a in metrics.items()},
        group_initial_rebalance_delay_ms="0",
        **FAST,
    )

    def brokers_sum(name: str, **labels) -> float:
        return sum(
            total(scrape(metrics[b.node_id]), name, **labels) for b in cluster.brokers if b.alive()
        )

    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("m", num_partitions=1, replication_factor=3)])
    state = eventually(
        lambda: (p := partition_state(cluster.brokers[0].address, "m")) and len(p.isr) == 3 and p,
        30,
        "the full ISR",
    )
    assert brokers_sum("kafka_server_brokertopicmetrics_messagesin_total", topic="m") == 0

    # A produce moves bytes-in and records-in on the leader.
    with Producer(cluster.bootstrap, acks="all") as producer:
        for _i in range(20):
            producer.send("m", b"x" * 100, partition=0)
        producer.flush(30)
    leader = metrics[state.leader]
    assert (
        total(scrape(leader), "kafka_server_brokertopicmetrics_messagesin_total", topic="m") == 20
    )
    assert total(scrape(leader), "kafka_server_brokertopicmetrics_bytesin_total", topic="m") > 2000

    # A new group moves the group count.
    assert brokers_sum("kafka_coordinator_group_groupmetadatamanager_numgroups") == 0
    with Consumer(
        cluster.bootstrap,
        group_id="watchers",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
    ) as consumer:
        consumer.subscribe(["m"])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            got += consumer.poll(timeout_ms=200)
        assert len(got) == 20
        consumer.commit()
        assert brokers_sum("kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
    assert total(scrape(leader), "kafka_server_brokertopicmetrics_bytesout_total", topic="m") > 2000

    # Every documented metric: served by some node.
    served = set()
    for address in metrics.values():
        names = set(scrape(address))
        served |= names | {family(name) for name in names}  # a gauge may end in _count
    missing = [name for name in documented() if name not in served]
    assert not missing, f"documented but not served: {missing}"
    requests = scrape(leader)
    assert (
        total(
            requests,
            "kafka_network_requestmetrics_requests_total",
            request="Produce",
            listener="PLAINTEXT",
        )
        >= 1
    )
    assert (
        total(
            requests, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE"
        )
        >= 1
    )
    controller = scrape(metrics[1])
    assert one(controller, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert one(controller, "kafka_controller_kafkacontroller_fencedbrokercount") == 0

    # A killed follower: the leader's partition is under-replicated, the broker fenced.
    assert one(scrape(leader), "kafka_server_replicamanager_underreplicatedpartitions") == 0
    follower = next(b for b in cluster.brokers if b.node_id != state.leader)
    follower.kill9()
    eventually(
        lambda: one(scrape(leader), "kafka_server_replicamanager_underreplicatedpartitions") >= 1,
        30,
        "an under-replicated partition on the leader",
    )
    eventually(
        lambda: one(scrape(metrics[1]), "kafka_controller_kafkacontroller_fencedbrokercount") == 1,
        30,
        "the killed broker fenced",
    )
    assert one(scrape(leader), "kafka_server_replicamanager_isrshrinks_total") >= 1
