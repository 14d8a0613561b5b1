"""`kraft consume` against a fake Consumer: where it starts, when it stops, and how keys and
values are rendered (raw text, or JSON with base64 for bytes that are not UTF-8)."""

from __future__ import annotations

import base64
import json

from clients.cli import consume as consume_mod
from clients.cli.consume import record_json, render_bytes


def _records(fakes, n, partition=0, key=None):
    return [fakes.Record("t", partition, i, 1000 + i, key, f"v{i}".encode(), []) for i in range(n)]


def test_render_bytes_prefers_utf8_and_falls_back_to_base64():
    assert render_bytes("héllo".encode()) == ("héllo", False)
    assert render_bytes(b"\xff\x00") == (base64.b64encode(b"\xff\x00").decode(), True)
    assert render_bytes(None) == (None, False)


def test_record_json_marks_base64_fields_only(fakes):
    rec = fakes.Record("t", 1, 5, 1234, b"\xfe", b"ok", [("h", b"\x80"), ("g", b"x")])
    assert record_json(rec) == {
        "topic": "t",
        "partition": 1,
        "offset": 5,
        "timestamp": 1234,
        "key": "/g==",
        "key_encoding": "base64",
        "value": "ok",
        "headers": [
            {"key": "h", "value": "gA==", "value_encoding": "base64"},
            {"key": "g", "value": "x"},
        ],
    }


def test_stops_at_max_messages(fakes, cli, capsysbinary):
    fakes.consumer_options = {"records": _records(fakes, 10), "batch": 3}
    assert cli(["consume", "t", "--from-beginning", "--max-messages", "4"]) == 0
    out = capsysbinary.readouterr()
    assert out.out == b"v0\nv1\nv2\nv3\n"
    assert out.err == b"consumed 4 records from t\n"
    assert len(fakes.consumer.records) == 6  # asked only for what it still needed
    assert fakes.consumer.closed


def test_stops_when_idle_for_timeout(fakes, cli, capsysbinary, monkeypatch):
    clock = iter(range(0, 10_000, 1))  # each call to the clock advances one second
    monkeypatch.setattr(consume_mod, "_now", lambda: next(clock))
    fakes.consumer_options = {"records": _records(fakes, 2), "batch": 5}
    assert cli(["consume", "t", "--timeout-ms", "3000"]) == 0
    assert capsysbinary.readouterr().out == b"v0\nv1\n"
    assert fakes.consumer.polls <= 4


def test_print_key_and_null_values(fakes, cli, capsysbinary):
    fakes.consumer_options = {
        "records": [
            fakes.Record("t", 0, 0, 1, b"k", b"v", []),
            fakes.Record("t", 0, 1, 1, None, None, []),
        ]
    }
    assert cli(["consume", "t", "--print-key", "--max-messages", "2"]) == 0
    assert capsysbinary.readouterr().out == b"k\tv\nnull\tnull\n"


def test_json_lines_have_the_documented_keys(fakes, cli, capsys):
    fakes.consumer_options = {"records": _records(fakes, 2, key=b"k")}
    assert cli(["consume", "t", "--format", "json", "--max-messages", "2"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [list(line) for line in lines] == [
        ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    ] * 2
    assert lines[1]["value"] == "v1" and lines[1]["key"] == "k"


def test_start_positions(fakes, cli):
    fakes.consumer_options = {"partitions": [0, 1, 2]}
    cli(
        [
            "consume",
            "t",
            "--partition",
            "0,2",
            "--offset",
            "7",
            "--max-messages",
            "1",
            "--timeout-ms",
            "1",
        ]
    )
    assert fakes.consumer.assigned == [fakes.TP("t", 0), fakes.TP("t", 2)]
    assert fakes.consumer.seeks == [(fakes.TP("t", 0), 7), (fakes.TP("t", 2), 7)]
    cli(["consume", "t", "--from-beginning", "--timeout-ms", "1"])
    assert [s for _, s in fakes.consumer.seeks] == ["earliest"] * 3
    assert fakes.consumer.config["auto_offset_reset"] == "earliest"
    cli(["consume", "t", "--timeout-ms", "1"])
    assert [s for _, s in fakes.consumer.seeks] == ["latest"] * 3


def test_unknown_partition_and_topic_are_explained(fakes, cli, capsys):
    fakes.consumer_options = {"partitions": [0, 1]}
    assert cli(["consume", "t", "--partition", "5"]) == 1
    assert "topic 't' has no partition 5; its partitions are 0..1" in capsys.readouterr().err
    fakes.consumer_options = {"partitions": []}
    assert cli(["consume", "t"]) == 1
    assert "create it with: kraft topic create t" in capsys.readouterr().err
