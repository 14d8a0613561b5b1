"""`--client kafka` before any connection: where the Kafka address comes from, and the clear
errors when it cannot be found or confluent-kafka is not installed."""

from __future__ import annotations

import argparse
import json
import sys

import pytest

from clients.cli import bench_kafka
from clients.cli.common import CliError


def args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"kafka_bootstrap": None, "data": "./kraft-data", **kw})


def test_the_flag_wins_over_the_data_dir(tmp_path):
    assert bench_kafka.kafka_bootstrap(args(kafka_bootstrap="h:1", data=tmp_path)) == "h:1"


def test_every_brokers_kafka_address_from_cluster_json(tmp_path):
    nodes = [
        {"id": 1, "roles": ["controller"]},
        {"id": 2, "kafka_address": "127.0.0.1:9092"},
        {"id": 3, "kafka_address": "127.0.0.1:9093"},
    ]
    (tmp_path / "cluster.json").write_text(json.dumps({"nodes": nodes}))
    assert bench_kafka.kafka_bootstrap(args(data=tmp_path)) == "127.0.0.1:9092,127.0.0.1:9093"


def test_a_missing_or_listenerless_cluster_json_says_what_to_pass(tmp_path):
    with pytest.raises(CliError, match="does not exist.*--kafka-bootstrap"):
        bench_kafka.kafka_bootstrap(args(data=tmp_path))
    (tmp_path / "cluster.json").write_text(json.dumps({"nodes": [{"id": 1}]}))
    with pytest.raises(CliError, match="no broker .* kafka_address"):
        bench_kafka.kafka_bootstrap(args(data=tmp_path))
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(CliError, match="unreadable"):
        bench_kafka.kafka_bootstrap(args(data=tmp_path))


def test_without_confluent_kafka_the_error_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # import raises ImportError
    with pytest.raises(CliError, match="pip install confluent-kafka"):
        bench_kafka.confluent()


def test_the_kraft_client_stays_the_default_and_never_imports_confluent_kafka(
    fakes, cli, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    assert cli(["bench", "produce", "--num-records", "100", "-q", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["client"] == "kraft"


def test_kafka_mode_refuses_a_value_too_small_for_its_stamp(cli, capsys, monkeypatch):
    monkeypatch.setattr(bench_kafka, "confluent", lambda: None)
    code = cli(["bench", "e2e", "--client", "kafka", "--record-size", "12"])
    assert code != 0 and "at least 16 bytes" in capsys.readouterr().err


def test_a_producer_setting_librdkafka_refuses_is_a_clear_error():
    ck = pytest.importorskip("confluent_kafka")
    bad = argparse.Namespace(producer_props=[("no.such.setting", "1")])
    with pytest.raises(CliError, match="librdkafka refused.*no.such.setting"):
        bench_kafka._producer(ck, {"bootstrap.servers": "127.0.0.1:1"}, bad)


def test_kraft_clients_bulk_send_is_refused_with_the_kafka_client(cli, capsys):
    assert cli(["bench", "produce", "--client", "kafka", "--send-batch"]) != 0
    assert "not with --client kafka" in capsys.readouterr().err
