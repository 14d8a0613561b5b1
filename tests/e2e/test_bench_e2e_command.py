"""`kraft bench e2e` against a real node: every record sent at the fixed rate comes back, the
latency figures are send -> receive on one clock, and the settings are in the JSON."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_bench_e2e_reports_latency_of_every_record(node, kraft):
    done = kraft(
        "bench",
        "e2e",
        "--bootstrap-server",
        node.address,
        "--rate",
        "400",
        "--seconds",
        "3",
        "--warmup-seconds",
        "1",
        "--acks",
        "1",
        "-q",
        "--format",
        "json",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["sent"] == result["received"] == 1200
    assert result["acks"] == 1 and result["rate"] == 400 and result["record_size"] == 100
    # Records of the warm-up second are not counted; the rest are, each with a latency.
    assert 700 <= result["latency_samples"] <= 900
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"] < 10_000


def test_bench_e2e_refuses_a_value_too_small_for_its_timestamp(node, kraft):
    done = kraft("bench", "e2e", "--bootstrap-server", node.address, "--record-size", "4")
    assert done.returncode != 0
    assert "at least 8 bytes" in done.stderr and "Traceback" not in done.stderr
