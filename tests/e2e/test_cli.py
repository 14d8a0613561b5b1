"""The `kraft` command line against a real node, as a user runs it: the README's flows work, and
each failure a user can cause is one line on stderr with a non-zero exit and no traceback."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def one_clear_line(result) -> str:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_readme_flow_create_produce_consume(node, kraft):
    bs = ("--bootstrap-server", node.address)
    assert kraft("topic", "create", "orders", "-p", "3", *bs).returncode == 0
    listed = json.loads(kraft("topic", "list", "--format", "json", *bs).stdout)
    assert "orders" in json.dumps(listed)

    produced = kraft(
        "produce", "orders", "--key-separator", ":", *bs, input="k1:hello\nk2:world\nk1:again\n"
    )
    assert produced.returncode == 0, produced.stderr

    consumed = kraft(
        "consume", "orders", "--from-beginning", "--max-messages", "3", "--format", "json", *bs
    )
    assert consumed.returncode == 0, consumed.stderr
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted((r["key"], r["value"]) for r in records) == [
        ("k1", "again"),
        ("k1", "hello"),
        ("k2", "world"),
    ]
    k1 = [r for r in records if r["key"] == "k1"]
    assert k1[0]["partition"] == k1[1]["partition"]  # one key, one partition, in order
    assert [r["value"] for r in sorted(k1, key=lambda r: r["offset"])] == ["hello", "again"]

    described = json.loads(kraft("topic", "describe", "orders", "--format", "json", *bs).stdout)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert sum(p["high_watermark"] for p in described["partitions"]) == 3
    assert {"leader", "leader_epoch", "replicas", "isr"} <= set(described["partitions"][0])


def test_user_errors_are_one_line_and_exit_non_zero(node, kraft):
    bs = ("--bootstrap-server", node.address)
    kraft("topic", "create", "small", "-c", "max.message.bytes=300", *bs)

    again = kraft("topic", "create", "small", *bs)
    assert again.returncode == 1 and "already exists" in again.stdout + again.stderr
    assert "does not exist" in one_clear_line(kraft("topic", "describe", "missing", *bs))
    assert "retention.ms" in one_clear_line(
        kraft("topic", "alter", "small", "--set", "retention.ms=soon", *bs)
    )
    assert "MESSAGE_TOO_LARGE" in one_clear_line(
        kraft("produce", "small", *bs, input="x" * 2000 + "\n")
    )
    assert one_clear_line(kraft("topic", "list", "--bootstrap-server", "127.0.0.1:1"))
    assert kraft("topic", "list", *bs).returncode == 0  # the node is still up


def test_bench_produce_and_consume_print_json_results(node, kraft):
    bs = ("--bootstrap-server", node.address)
    produced = kraft(
        "bench",
        "produce",
        "--num-records",
        "20000",
        "--record-size",
        "100",
        "--format",
        "json",
        "-q",
        *bs,
    )
    assert produced.returncode == 0, produced.stderr
    result = json.loads(produced.stdout)
    assert result["records"] == 20000
    assert (
        result["records_per_sec"] > 0 and result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    )

    consumed = kraft("bench", "consume", "--format", "json", "-q", *bs)
    assert consumed.returncode == 0, consumed.stderr
    assert json.loads(consumed.stdout)["records"] == 20000
