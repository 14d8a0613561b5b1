"""`kraft dev --port 0 --detach` runs the single combined node in the background (it was refused),
refuses a second one on the same data dir, and a re-run after --stop gets the same address."""

from __future__ import annotations

import json

import pytest

from entry.dev_cluster import is_kraft_process

pytestmark = pytest.mark.e2e


def test_detached_single_node_keeps_its_address_across_restarts(dev_data, kraft):
    data = dev_data
    started = kraft("dev", "--port", "0", "--detach", "--data", str(data))
    assert started.returncode == 0, started.stderr
    node = json.loads((data / "cluster.json").read_text())["nodes"][0]
    assert node["roles"] == ["broker", "controller"] and is_kraft_process(node["pid"])
    assert f"KRAFT_BOOTSTRAP={node['address']}" in started.stdout
    bs = ("--bootstrap-server", node["address"])
    assert kraft("topic", "create", "kept", *bs).returncode == 0

    twice = kraft("dev", "--port", "0", "--detach", "--data", str(data))
    assert twice.returncode == 1 and "already running" in twice.stderr

    assert kraft("dev", "--stop", "--data", str(data)).returncode == 0
    assert not is_kraft_process(node["pid"])
    again = kraft("dev", "--port", "0", "--detach", "--data", str(data))
    assert again.returncode == 0, again.stderr
    restarted = json.loads((data / "cluster.json").read_text())["nodes"][0]
    assert (restarted["address"], restarted["controller_address"]) == (
        node["address"],
        node["controller_address"],
    )
    assert "kept" in kraft("topic", "list", *bs).stdout  # the saved address still works
    assert kraft("dev", "--stop", "--data", str(data)).returncode == 0
