"""`kraft bench produce|consume` against fakes: the JSON result has the promised keys, the topic is
created when missing, the throttle holds the rate, failures stop the run, ages are measured."""

from __future__ import annotations

import json

import pytest

from clients.cli import bench, bench_consume

KEYS = {
    "records",
    "seconds",
    "records_per_sec",
    "mb_per_sec",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "acks",
    "record_size",
    "compression",
    "partitions",
}
CONSUME_KEYS = {
    "records",
    "seconds",
    "records_per_sec",
    "mb_per_sec",
    "age_p50_ms",
    "age_p99_ms",
    "age_max_ms",
    "age",
    "partitions",
    "record_size",
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1e-6  # every reading costs a microsecond, so time moves forward
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(bench, "_clock", c)
    monkeypatch.setattr(bench, "_sleep", c.sleep)
    return c


def test_produce_json_result_and_topic_creation(fakes, cli, capsys, clock):
    assert (
        cli(
            [
                "bench",
                "produce",
                "--num-records",
                "1000",
                "--record-size",
                "10",
                "--partitions",
                "3",
                "--format",
                "json",
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert KEYS <= set(result) and result["records"] == 1000
    assert result["latency_samples"] > 0 and result["errors"] == 0
    assert len(fakes.producer.sent) == 1000
    # one payload object reused for every record, of the asked size
    assert len({id(r["value"]) for r in fakes.producer.sent}) == 1
    assert len(fakes.producer.sent[0]["value"]) == 10
    assert fakes.admin.topics["bench"].partitions[2].partition == 2
    assert "created topic bench with 3 partition(s)" in out.err


def test_produce_send_batch_sends_each_chunk_in_one_call(fakes, cli, capsys, clock):
    assert (
        cli(
            [
                "bench",
                "produce",
                "--num-records",
                "1000",
                "--sample-every",
                "100",
                "--send-batch",
                "--format",
                "json",
                "-q",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["records"] == 1000 and result["latency_samples"] == 10
    assert len(fakes.producer.sent) == 1000


def test_produce_table_has_one_row_of_results(fakes, cli, capsys, clock):
    fakes.admin.add_topic("bench")
    assert cli(["bench", "produce", "--num-records", "100", "-q"]) == 0
    out = capsys.readouterr()
    header, row = out.out.splitlines()
    assert header.split() == [
        "RECORDS",
        "SECONDS",
        "RECORDS/S",
        "MB/S",
        "P50-MS",
        "P99-MS",
        "P99.9-MS",
        "MAX-MS",
        "ACKS",
        "SIZE",
        "COMPRESSION",
        "PARTITIONS",
    ]
    assert row.split()[0] == "100" and row.split()[-4:] == ["all", "100", "none", "3"]
    assert "created topic" not in out.err


def test_produce_defaults_to_acks_all_like_kraft_produce_and_reports_its_settings(
    fakes, cli, capsys, clock
):
    assert cli(["bench", "produce", "--num-records", "10", "--format", "json", "-q"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert fakes.producer.config["acks"] == -1
    assert (result["acks"], result["record_size"], result["compression"], result["partitions"]) == (
        "all",
        100,
        "none",
        3,
    )
    assert (
        cli(
            [
                "bench",
                "produce",
                "--num-records",
                "10",
                "--acks",
                "1",
                "--record-size",
                "7",
                "--compression",
                "lz4",
                "--format",
                "json",
                "-q",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert fakes.producer.config["acks"] == 1
    assert (result["acks"], result["record_size"], result["compression"]) == ("1", 7, "lz4")


def test_throughput_cap_is_honoured(fakes, cli, capsys, clock):
    start = clock.now
    assert (
        cli(
            [
                "bench",
                "produce",
                "--num-records",
                "2000",
                "--throughput",
                "1000",
                "--format",
                "json",
                "-q",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert 1.9 <= clock.now - start <= 2.2
    assert 900 <= result["records_per_sec"] <= 1050


def test_progress_lines_go_to_stderr(fakes, cli, capsys, clock):
    cli(["bench", "produce", "--num-records", "3000", "--throughput", "1000", "--format", "json"])
    err = capsys.readouterr().err
    assert "records sent" in err and "rec/s" in err


def test_produce_failure_stops_and_exits_1(fakes, cli, capsys, clock):
    fakes.producer_options = {"fail_from": 50}
    assert cli(["bench", "produce", "--num-records", "100000", "-q"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("error: bench stopped after") and "NOT_ENOUGH_REPLICAS" in err
    assert len(fakes.producer.sent) < 1000


def test_sampling_keeps_several_samples_per_batch():
    assert bench.auto_sample_every(16384, 100) == 35
    assert bench.auto_sample_every(16384, 10) == 64
    assert bench.auto_sample_every(16384, 100_000) == 1


def _bench_records(fakes, n, partitions=2):
    return [
        fakes.Record("bench", i % partitions, i // partitions, 5_000, None, b"x" * 10, [])
        for i in range(n)
    ]


def test_consume_reads_to_the_end_offsets_and_measures_age(fakes, cli, capsys, clock, monkeypatch):
    monkeypatch.setattr(bench_consume, "_wall_ms", lambda: 5_250.0)
    fakes.consumer_options = {
        "records": _bench_records(fakes, 14),
        "partitions": [0, 1],
        "batch": 3,
    }
    assert cli(["bench", "consume", "--format", "json", "-q"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert CONSUME_KEYS <= set(result) and not {"p50_ms", "latency"} & set(result)
    assert result["records"] == 14 and result["bytes"] == 140
    assert result["age_p50_ms"] == 250.0 and result["age_max_ms"] == 250.0
    assert "not a fetch latency" in result["age"]
    assert (result["partitions"], result["record_size"]) == (2, 10)


def test_consume_table_names_ages_as_ages(fakes, cli, capsys, clock, monkeypatch):
    monkeypatch.setattr(bench_consume, "_wall_ms", lambda: 5_250.0)
    fakes.consumer_options = {"records": _bench_records(fakes, 4), "partitions": [0, 1]}
    assert cli(["bench", "consume", "-q"]) == 0
    out = capsys.readouterr()
    header, row = out.out.splitlines()
    assert header.split() == [
        "RECORDS",
        "SECONDS",
        "RECORDS/S",
        "MB/S",
        "AGE-P50-MS",
        "AGE-P99-MS",
        "AGE-MAX-MS",
        "PARTITIONS",
        "AVG-SIZE",
    ]
    assert row.split()[-2:] == ["2", "10"]
    assert "AGE: poll time minus the record's timestamp" in out.err
    assert [s for _, s in fakes.consumer.seeks] == ["earliest", "earliest"]


def test_consume_num_records_limits_the_run(fakes, cli, capsys, clock):
    fakes.consumer_options = {"records": _bench_records(fakes, 10), "partitions": [0, 1]}
    assert cli(["bench", "consume", "--num-records", "5", "--format", "json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 5


def test_consume_of_an_empty_topic_says_how_to_fill_it(fakes, cli, capsys, clock):
    fakes.consumer_options = {"records": [], "partitions": [0]}
    assert cli(["bench", "consume"]) == 1
    assert "fill it first with: kraft bench produce --topic bench" in capsys.readouterr().err


def test_consume_gives_up_when_idle(fakes, cli, capsys, clock):
    fakes.consumer_options = {"records": [], "partitions": [0]}
    assert cli(["bench", "consume", "--num-records", "5", "--timeout-ms", "1", "-q"]) == 1
    assert "stopped after 0 of 5 records" in capsys.readouterr().err


def test_e2e_table_prints_the_settings_its_result_has(capsys):
    """bench e2e's text table raised KeyError('compression') after the whole run."""
    from clients.cli import bench_e2e

    result = {
        "records": 10,
        "seconds": 1,
        "records_per_sec": 10,
        "mb_per_sec": 0.001,
        "p50_ms": 1.0,
        "p99_ms": 2.0,
        "p999_ms": 2.0,
        "max_ms": 2.0,
        "acks": 1,
        "record_size": 100,
        "partitions": 1,
        "linger_ms": 0,
    }
    args = type("Args", (), {"format": "table"})()
    bench.print_result(args, result, [], settings=bench_e2e.SETTINGS)
    out = capsys.readouterr().out
    assert "LINGER-MS" in out and "COMPRESSION" not in out
