"""`kraft doctor` on a real kraft dev cluster (1 controller, 2 brokers): a broker killed -9 is named
as not live with the partitions it holds, which are under-replicated; with the controller gone
too, it says there is no active controller."""

from __future__ import annotations

import json
import os
import signal

import pytest
from waiting import eventually

pytestmark = pytest.mark.e2e


def test_doctor_names_a_dead_broker_its_partitions_and_a_missing_controller(dev_data, kraft):
    data = dev_data
    started = kraft(
        "dev",
        "--controllers",
        "1",
        "--brokers",
        "2",
        "--port",
        "0",
        "--detach",
        "--data",
        str(data),
        "--override",
        "broker.session.timeout.ms=2000",
        "--override",
        "broker.heartbeat.interval.ms=200",
        timeout=120,
    )
    assert started.returncode == 0, started.stderr
    nodes = json.loads((data / "cluster.json").read_text())["nodes"]
    controller, broker2, broker3 = nodes
    bs = ("--bootstrap-server", broker2["address"])
    assert kraft("topic", "create", "orders", "-p", "2", "-r", "2", *bs).returncode == 0
    assert eventually(lambda: kraft("doctor", *bs).returncode == 0, 30, "a healthy cluster")

    os.kill(broker3["pid"], signal.SIGKILL)

    def report():
        done = kraft("doctor", "--format", "json", *bs)
        doc = json.loads(done.stdout) if done.stdout else {}
        kinds = [p["kind"] for p in doc.get("problems", [])]
        return doc if {"broker_not_live", "under_replicated_partitions"} <= set(kinds) else None

    doc = eventually(report, 30, "broker 3 reported down")
    assert doc["live_brokers"] == [2]
    down = next(p for p in doc["problems"] if p["kind"] == "broker_not_live")
    assert down["details"] == {"broker": 3, "partitions": ["orders-0", "orders-1"]}
    text = kraft("doctor", *bs)
    assert text.returncode == 1
    assert "problem: broker 3 holds replicas of 2 partitions but is not live" in text.stdout

    os.kill(controller["pid"], signal.SIGKILL)
    eventually(
        lambda: "problem: no active controller" in kraft("doctor", *bs).stdout,
        30,
        "no active controller reported",
    )
