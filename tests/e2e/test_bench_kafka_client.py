"""`kraft bench produce|consume|e2e --client kafka` against a real node's Kafka listener: the
produce run counts the records the log end moved by (only its own, on a topic already holding
some), consume reads exactly what is there, e2e gets every record back once, and the address
comes from --kafka-bootstrap or from the kraft dev data dir's cluster.json."""

from __future__ import annotations

import json
import uuid

import pytest

pytestmark = pytest.mark.e2e
pytest.importorskip("confluent_kafka")


def bench(kraft, node, *args: str) -> dict:
    done = kraft(
        "bench",
        *args,
        "--client",
        "kafka",
        "--kafka-bootstrap",
        node.kafka_address,
        "--bootstrap-server",
        node.address,
        "-q",
        "--format",
        "json",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_produce_counts_its_own_records_by_the_log_end_and_consume_reads_them(node, kraft):
    topic = f"kb-{uuid.uuid4().hex[:8]}"
    first = bench(kraft, node, "produce", "--topic", topic, "--num-records", "3000", "--acks", "1")
    assert first["client"] == "kafka" and first["records"] == first["sent"] == 3000
    # A second run on the same topic counts only what it added, not the log's total.
    second = bench(
        kraft, node, "produce", "--topic", topic, "--num-records", "1234", "--record-size", "10"
    )
    assert second["records"] == 1234 and second["acks"] == "all"
    read = bench(kraft, node, "consume", "--topic", topic)
    assert read["records"] == 4234 and read["bytes"] == 3000 * 100 + 1234 * 10
    assert 4234 // 16 <= read["age_samples"] <= 4234  # every 16th record of each batch
    # kraft's own client over gRPC reads the same count from the same topic.
    done = kraft(
        "bench",
        "consume",
        "--bootstrap-server",
        node.address,
        "--topic",
        topic,
        "-q",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 4234


def test_e2e_gets_every_record_back_once_from_a_second_process(node, kraft):
    result = bench(
        kraft,
        node,
        "e2e",
        "--rate",
        "300",
        "--seconds",
        "2",
        "--warmup-seconds",
        "1",
        "--acks",
        "1",
        "--producer-props",
        "max.in.flight=5",  # as Kafka's Java producer; reaches librdkafka (a bad key fails)
    )
    assert result["sent"] == result["received"] == 600 and result["duplicates"] == 0
    # The warm-up second's 300 records are not counted; each of the others has a latency.
    assert result["latency_samples"] == 300
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"] < 10_000


def test_the_kafka_address_comes_from_the_data_dirs_cluster_json(node, kraft, tmp_path):
    (tmp_path / "cluster.json").write_text(
        json.dumps({"nodes": [{"id": 1, "kafka_address": node.kafka_address}]})
    )
    topic = f"kb-{uuid.uuid4().hex[:8]}"
    done = kraft(
        "bench",
        "produce",
        "--client",
        "kafka",
        "--data",
        str(tmp_path),
        "--bootstrap-server",
        node.address,
        "--topic",
        topic,
        "--num-records",
        "500",
        "-q",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 500
