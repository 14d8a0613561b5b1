"""A real node that auto-creates a topic a producer named (a typo) logs one WARNING naming it and
auto.create.topics.enable, however often it is produced to; with the setting off, nothing is
created and the producer is told the topic does not exist."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def warnings_about(log: str, topic: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if "WARNING" in line and f"'{topic}'" in line and "auto.create.topics.enable" in line
    ]


def test_one_warning_per_auto_created_topic(node_factory, kraft):
    node = node_factory("n1").start()
    bs = ("--bootstrap-server", node.address)
    for _ in range(2):
        assert kraft("produce", "ordres", *bs, input="oops\n").returncode == 0
    assert len(warnings_about(node.log_path.read_text(), "ordres")) == 1
    assert node.stop() == 0


def test_turned_off_nothing_is_created(node_factory, kraft):
    node = node_factory("n1", ["auto.create.topics.enable=false"]).start()
    bs = ("--bootstrap-server", node.address)
    refused = kraft("produce", "ordres", *bs, input="oops\n")
    assert refused.returncode == 1 and "does not exist" in refused.stderr
    assert "ordres" not in kraft("topic", "list", *bs).stdout
    assert warnings_about(node.log_path.read_text(), "ordres") == []
    assert node.stop() == 0
