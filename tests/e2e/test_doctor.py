"""`kraft doctor` against a real node: healthy says so and exits 0; a group behind on its topic is
named in plain words (and in --format json) with exit code 1."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_doctor_says_ok_then_names_a_group_behind(node_factory, kraft):
    node = node_factory("n1", ["group.initial.rebalance.delay.ms=0"]).start()
    bs = ("--bootstrap-server", node.address)
    healthy = kraft("doctor", *bs)
    assert healthy.returncode == 0, healthy.stderr
    assert "ok: no problem found" in healthy.stdout

    assert kraft("produce", "orders", *bs, input="a\nb\nc\n").returncode == 0
    consumed = kraft(
        "consume", "orders", "--group", "billing", "--from-beginning", "--max-messages", "1", *bs
    )
    assert consumed.returncode == 0, consumed.stderr
    behind = kraft("doctor", *bs)
    assert behind.returncode == 1, behind.stderr
    assert "problem: group 'billing' is 2 records behind on orders-0" in behind.stdout

    report = json.loads(kraft("doctor", "--format", "json", *bs).stdout)
    assert report["healthy"] is False and report["live_brokers"] == [1]
    [problem] = report["problems"]
    assert (problem["kind"], problem["details"]["lag"]) == ("group_lag", 2)
    assert kraft("doctor", "--max-lag", "2", *bs).returncode == 0
