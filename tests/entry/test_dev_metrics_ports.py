"""kraft dev turns every node's metrics endpoint on, each at a port of its own apart from the
nodes' listeners, and cluster.json says where; --override metrics.listener= turns them off."""

from __future__ import annotations

from broker.server.config import build_config
from entry.dev_cluster import node_entry, plan_cluster


def test_every_node_serves_metrics_on_a_port_of_its_own(tmp_path):
    plans = plan_cluster(tmp_path, 3, 3, port=0)
    listeners = [p.properties["metrics.listener"] for p in plans]
    ports = [int(url.rpartition(":")[2]) for url in listeners]
    node_ports = [int(p.address.rpartition(":")[2]) for p in plans]
    assert all(url.startswith("http://127.0.0.1:") for url in listeners)
    assert len(set(ports)) == 6 and not set(ports) & set(node_ports)
    assert [build_config(p.properties).metrics_listener for p in plans] == [
        ("127.0.0.1", port) for port in ports
    ]
    assert [node_entry(p, 1)["metrics_address"] for p in plans] == [
        f"127.0.0.1:{port}" for port in ports
    ]


def test_an_empty_override_turns_them_off(tmp_path):
    plans = plan_cluster(tmp_path, 1, 1, extra_overrides=["metrics.listener="])
    assert all(build_config(p.properties).metrics_listener is None for p in plans)
    assert [node_entry(p, 1)["metrics_address"] for p in plans] == [None, None]
