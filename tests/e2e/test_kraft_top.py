"""`kraft top` against a real `kraft dev` cluster: cluster.json names every node's metrics
endpoint, and one --once sample sees every node up, the active controller and the brokers."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_top_once_reads_a_kraft_dev_cluster_from_its_cluster_json(dev_data, kraft):
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
        str(dev_data),
        timeout=120,
    )
    assert started.returncode == 0, started.stderr
    nodes = json.loads((dev_data / "cluster.json").read_text())["nodes"]
    assert all(n["metrics_address"] for n in nodes)
    sample = kraft(
        "top", "--data", str(dev_data), "--once", "--format", "json", "--interval", "0.5"
    )
    assert sample.returncode == 0, sample.stderr
    view = json.loads(sample.stdout)
    assert view["cluster"]["nodes_up"] == 3 and view["cluster"]["active_controller"] == 1
    assert {n["node_id"]: n["roles"] for n in view["nodes"]} == {
        1: ["controller"],
        2: ["broker"],
        3: ["broker"],
    }
    assert view["cluster"]["fenced_brokers"] == 0
    table = kraft("top", "--data", str(dev_data), "--once", "--interval", "0.2")
    assert table.returncode == 0 and "nodes up 3/3" in table.stdout, table.stdout
    assert kraft("dev", "--stop", "--data", str(dev_data)).returncode == 0
    down = kraft("top", "--data", str(dev_data), "--once", "--interval", "0.2")
    assert down.returncode == 1 and "not answering" in down.stdout
