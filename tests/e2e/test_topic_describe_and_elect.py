"""`kraft topic describe` and leader elections with real processes (3 controllers, 3 brokers, RF=3):
after acks=all writes each partition's leader reports the high watermark and every replica's log
end at the record count with an ISR of 3; when the leader of partition 0 is stopped and comes back
in sync, `kraft topic elect-leaders` (or, with a short leader.imbalance.check.interval.seconds,
the active controller by itself) makes its preferred replica lead again."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from clients.producer import Producer

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_replication_failover import FAST, eventually  # noqa: E402

pytestmark = pytest.mark.e2e

COUNTS = {0: 7, 1: 5, 2: 3}  # records per partition, different so a mix-up shows


def describe(kraft, bootstrap: str) -> dict | None:
    done = kraft("topic", "describe", "events", "--format", "json", "--bootstrap-server", bootstrap)
    return json.loads(done.stdout) if done.returncode == 0 else None


def partition(kraft, bootstrap: str, p: int) -> dict | None:
    out = describe(kraft, bootstrap)
    return out["partitions"][p] if out else None


@pytest.mark.parametrize("how", ["elect-leaders", "automatic"])
def test_describe_shows_offsets_and_the_preferred_replica_leads_again(cluster_factory, kraft, how):
    overrides = (
        dict(FAST, auto_leader_rebalance_enable="false")
        if how == "elect-leaders"
        else dict(FAST, leader_imbalance_check_interval_seconds="1")
    )
    cluster = cluster_factory(3, 3, **overrides)
    by_id = {b.node_id: b for b in cluster.brokers}
    created = kraft(
        "topic",
        "create",
        "events",
        "-p",
        "3",
        "-r",
        "3",
        "-c",
        "min.insync.replicas=2",
        "--bootstrap-server",
        cluster.bootstrap,
    )
    assert created.returncode == 0, created.stderr
    eventually(
        lambda: (
            (d := describe(kraft, cluster.bootstrap))
            and all(len(p["isr"]) == 3 for p in d["partitions"])
        ),
        30,
        "a full ISR everywhere",
    )

    with Producer(cluster.bootstrap, acks=-1) as producer:
        futures = [
            producer.send("events", b"v%d" % i, partition=p)
            for p, n in COUNTS.items()
            for i in range(n)
        ]
        producer.flush(30)
        assert all(f.exception() is None for f in futures)
    before = describe(kraft, cluster.bootstrap)["partitions"]
    for p in before:
        n = COUNTS[p["partition"]]
        assert (p["high_watermark"], p["log_end_offset"], p["log_start_offset"]) == (n, n, 0), p
        assert sorted(p["isr"]) == sorted(p["replicas"]) and len(p["isr"]) == 3
        # acks=all waited for every ISR member: the leader has seen each fetch up to the end.
        assert p["replica_log_end_offsets"] == {str(r): n for r in p["replicas"]}, p

    preferred = before[0]["replicas"][0]
    assert before[0]["leader"] == preferred
    by_id[preferred].stop()  # SIGTERM: a controlled shutdown moves its leaderships
    survivors = ",".join(b.address for b in cluster.brokers if b.node_id != preferred)
    moved = eventually(
        lambda: (p := partition(kraft, survivors, 0)) and p["leader"] not in (-1, preferred) and p,
        30,
        "a new leader",
    )
    assert moved["leader_epoch"] > before[0]["leader_epoch"]
    assert moved["high_watermark"] == COUNTS[0]  # acknowledged records stay committed

    by_id[preferred].spawn()
    by_id[preferred].wait_started()
    if how == "elect-leaders":
        eventually(
            lambda: (p := partition(kraft, survivors, 0)) and preferred in p["isr"],
            30,
            f"broker {preferred} back in the ISR",
        )
        done = kraft(
            "topic",
            "elect-leaders",
            "events",
            "--type",
            "preferred",
            "--format",
            "json",
            "--bootstrap-server",
            cluster.bootstrap,
        )
        assert done.returncode == 0, done.stderr
        assert {r["partition"]: r["status"] for r in json.loads(done.stdout)} == {
            0: "elected",
            1: "not-needed",
            2: "not-needed",
        }
    back = eventually(
        lambda: (p := partition(kraft, cluster.bootstrap, 0)) and p["leader"] == preferred and p,
        30,
        f"broker {preferred} leading again",
    )
    assert back["leader_epoch"] > moved["leader_epoch"] and len(back["isr"]) == 3
    assert back["high_watermark"] == COUNTS[0]
