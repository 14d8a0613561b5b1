"""What a node writes when it starts, on a real process: one line naming its id, roles,
listeners, cluster id and data dir, and no INFO flood (the group coordinator used to log one
line per __consumer_offsets partition, 50 by default); --log-format json makes every line JSON."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def info_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " INFO " in line or '"level": "INFO"' in line]


def restart_with_a_group(node_factory, kraft):
    """A node with __consumer_offsets (50 partitions) and a group, stopped and started again;
    returns the node and the log its second start wrote."""
    node = node_factory("n1", ["group.initial.rebalance.delay.ms=0"]).start()
    bs = ("--bootstrap-server", node.address)
    assert kraft("produce", "orders", *bs, input="one\n").returncode == 0
    consumed = kraft(
        "consume", "orders", "--group", "billing", "--from-beginning", "--max-messages", "1", *bs
    )
    assert consumed.returncode == 0, consumed.stderr
    assert node.stop() == 0
    before = node.log_path.stat().st_size
    node.start()
    # Once the group answers, its coordinator has loaded; the others load alongside it.
    described = kraft("group", "describe", "billing", "--bootstrap-server", node.address)
    assert described.returncode == 0, described.stderr
    return node, node.log_path.read_text()[before:]


def test_a_start_is_one_line_and_no_info_flood(node_factory, kraft):
    node, log = restart_with_a_group(node_factory, kraft)
    assert info_lines(log) == [], log[:3000]
    assert node.stop() == 0


def test_json_log_format_makes_every_line_json(node_factory, kraft, monkeypatch):
    monkeypatch.setenv("KRAFT_LOG_FORMAT", "json")
    node, log = restart_with_a_group(node_factory, kraft)
    assert node.stop() == 0
    lines = node.log_path.read_text().splitlines()
    docs = [json.loads(line) for line in lines]  # every line, both starts and stops
    assert {"time", "level", "logger", "message"} <= set(docs[0])
    assert any(d["message"] == "node 1 stopped cleanly" for d in docs)
