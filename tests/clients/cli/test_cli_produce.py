"""`kraft produce` against a fake Producer: one record per stdin line, keys split at the first
separator, JSON lines per acknowledged record, and a failure as one line with exit 1."""

from __future__ import annotations

import io
import json
import sys

import pytest


@pytest.fixture
def stdin(monkeypatch):
    def feed(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    return feed


def test_each_line_is_one_record_and_summary_goes_to_stderr(fakes, cli, stdin, capsys):
    stdin(b"hello\n\nworld\r\nlast-without-newline")
    assert cli(["produce", "orders"]) == 0
    assert [r["value"] for r in fakes.producer.sent] == [
        b"hello",
        b"",
        b"world",
        b"last-without-newline",
    ]
    assert all(r["key"] is None for r in fakes.producer.sent)
    out = capsys.readouterr()
    assert out.out == "" and out.err == "produced 4 records to orders\n"
    assert fakes.producer.flushed and fakes.producer.closed


def test_key_separator_splits_at_the_first_occurrence(fakes, cli, stdin):
    stdin(b"k1:v1\nk2:a:b\n:empty-key\n")
    assert cli(["produce", "orders", "--key-separator", ":"]) == 0
    assert [(r["key"], r["value"]) for r in fakes.producer.sent] == [
        (b"k1", b"v1"),
        (b"k2", b"a:b"),
        (b"", b"empty-key"),
    ]


def test_line_without_separator_names_the_line(fakes, cli, stdin, capsys):
    stdin(b"k1\tv1\nno separator here\n")
    assert cli(["produce", "orders", "--key-separator", "\t"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: line 2 has no key separator") and err.count("\n") == 1


def test_options_reach_the_producer_and_each_send(fakes, cli, stdin):
    stdin(b"v\n")
    assert (
        cli(
            [
                "produce",
                "orders",
                "--acks",
                "all",
                "--compression",
                "lz4",
                "--linger-ms",
                "0",
                "--batch-size",
                "1024",
                "--partition",
                "2",
                "-H",
                "trace=abc",
            ]
        )
        == 0
    )
    cfg = fakes.producer.config
    assert (cfg["acks"], cfg["compression_type"], cfg["linger_ms"], cfg["batch_size"]) == (
        -1,
        "lz4",
        0,
        1024,
    )
    assert fakes.producer.sent[0]["partition"] == 2
    assert fakes.producer.sent[0]["headers"] == [("trace", b"abc")]


def test_json_prints_one_line_per_record_in_order(fakes, cli, stdin, capsys):
    stdin(b"a\nb\n")
    assert cli(["produce", "orders", "--format", "json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {"topic": "orders", "partition": 0, "offset": 0, "timestamp": 1_700_000_000_000},
        {"topic": "orders", "partition": 0, "offset": 1, "timestamp": 1_700_000_000_001},
    ]


def test_a_failed_record_is_one_line_and_exit_1(fakes, cli, stdin, capsys):
    fakes.producer_options = {"fail_from": 1}
    stdin(b"a\nb\nc\nd\n")
    assert cli(["produce", "orders"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "error: producing to orders failed after 1 of 2 records: NOT_ENOUGH_REPLICAS"
    )
    assert len(fakes.producer.sent) == 2  # stopped reading after the failure


def test_unknown_topic_says_how_to_create_it(fakes, cli, stdin, capsys):
    fakes.producer_options = {"partitions": []}
    stdin(b"a\n")
    assert cli(["produce", "nope"]) == 1
    assert (
        capsys.readouterr().err
        == "error: topic 'nope' does not exist; create it with: kraft topic create nope\n"
    )


def test_partition_out_of_range_is_refused_before_sending(fakes, cli, stdin, capsys):
    stdin(b"a\n")
    assert cli(["produce", "orders", "--partition", "7"]) == 1
    assert "has no partition 7" in capsys.readouterr().err
    assert fakes.producer.sent == []
