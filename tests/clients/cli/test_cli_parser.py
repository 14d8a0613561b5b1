"""Every client command parses its documented flags, and every --help ends with examples that
start with `kraft `, so users can copy one."""

from __future__ import annotations

import argparse

import pytest

from clients.cli import add_common_options

LEAVES = [
    ["topic", "create"],
    ["topic", "list"],
    ["topic", "describe"],
    ["topic", "alter"],
    ["topic", "delete"],
    ["produce"],
    ["consume"],
    ["bench", "produce"],
    ["bench", "consume"],
]


def _subparser(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("path", LEAVES + [["topic"], ["bench"]], ids=" ".join)
def test_help_epilog_has_an_example(path, parser, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(path + ["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    examples = text.split("examples:", 1)[1].splitlines()
    assert any(line.strip().startswith("kraft " + " ".join(path)) for line in examples), text


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_leaf_has_a_function_and_common_options(path, parser):
    leaf = _subparser(parser, path)
    flags = {s for a in leaf._actions for s in a.option_strings}
    assert {"--bootstrap-server", "--format", "--debug"} <= flags
    assert callable(leaf.get_default("func"))


def test_topic_create_flags(parser):
    args = parser.parse_args(
        [
            "topic",
            "create",
            "a",
            "b",
            "-p",
            "3",
            "-r",
            "2",
            "-c",
            "x=1",
            "--config",
            "y=a=b",
            "--format",
            "json",
            "--bootstrap-server",
            "h:1,h:2",
        ]
    )
    assert args.names == ["a", "b"] and args.partitions == 3 and args.replication_factor == 2
    assert args.config == [("x", "1"), ("y", "a=b")]
    assert args.format == "json" and args.bootstrap_server == "h:1,h:2"


def test_topic_create_defaults_leave_choice_to_the_cluster(parser):
    args = parser.parse_args(["topic", "create", "a"])
    assert args.partitions == -1 and args.replication_factor == -1 and args.config == []


def test_bad_config_is_a_usage_error(capsys, parser):
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["topic", "create", "a", "-c", "novalue"])
    assert exit_.value.code == 2
    assert "expected key=value" in capsys.readouterr().err


def test_topic_alter_list_describe_delete_flags(parser):
    parse = parser.parse_args
    args = parse(
        [
            "topic",
            "alter",
            "t",
            "--set",
            "a=1",
            "--set",
            "b=2",
            "--delete",
            "c",
            "--partitions",
            "6",
        ]
    )
    assert args.set_configs == [("a", "1"), ("b", "2")] and args.delete_configs == ["c"]
    assert args.partitions == 6
    assert parse(["topic", "list", "-i"]).internal
    assert parse(["topic", "describe", "t"]).name == "t"
    assert parse(["topic", "delete", "t", "u"]).names == ["t", "u"]


def test_produce_flags(parser):
    args = parser.parse_args(
        [
            "produce",
            "t",
            "--key-separator",
            ":",
            "--partition",
            "2",
            "--acks",
            "all",
            "--compression",
            "zstd",
            "--linger-ms",
            "0",
            "--batch-size",
            "1000",
            "-H",
            "h=v",
        ]
    )
    assert (args.topic, args.key_separator, args.partition) == ("t", ":", 2)
    assert args.acks == -1 and args.compression == "zstd"
    assert args.linger_ms == 0 and args.batch_size == 1000 and args.header == [("h", "v")]


@pytest.mark.parametrize("value", ["2", "none", "-2"])
def test_produce_rejects_bad_acks(value, parser):
    with pytest.raises(SystemExit):
        parser.parse_args(["produce", "t", "--acks", value])


def test_consume_flags(parser):
    parse = parser.parse_args
    args = parse(
        [
            "consume",
            "t",
            "--offset",
            "42",
            "--partition",
            "0,1",
            "--partition",
            "3",
            "--max-messages",
            "5",
            "--timeout-ms",
            "100",
            "--print-key",
        ]
    )
    assert args.offset == 42 and args.partitions == [[0, 1], [3]]
    assert args.max_messages == 5 and args.timeout_ms == 100 and args.print_key
    assert parse(["consume", "t", "--offset", "earliest"]).offset == "earliest"
    assert parse(["consume", "t"]).offset == "latest"
    assert parse(["consume", "t", "--from-beginning"]).from_beginning


def test_consume_from_beginning_and_offset_exclude_each_other(parser):
    with pytest.raises(SystemExit):
        parser.parse_args(["consume", "t", "--from-beginning", "--offset", "3"])
    with pytest.raises(SystemExit):
        parser.parse_args(["consume", "t", "--offset", "soon"])


def test_bench_produce_defaults_and_flags(parser):
    parse = parser.parse_args
    args = parse(["bench", "produce"])
    assert (args.topic, args.partitions, args.num_records, args.record_size) == (
        "bench",
        1,
        1_000_000,
        100,
    )
    assert (args.acks, args.compression, args.batch_size, args.linger_ms, args.throughput) == (
        -1,
        "none",
        16384,
        5,
        None,
    )
    args = parse(
        [
            "bench",
            "produce",
            "--topic",
            "x",
            "--partitions",
            "4",
            "--num-records",
            "10",
            "--record-size",
            "1000",
            "--acks",
            "all",
            "--compression",
            "lz4",
            "--batch-size",
            "65536",
            "--linger-ms",
            "20",
            "--throughput",
            "500",
            "-q",
        ]
    )
    assert (args.topic, args.partitions, args.num_records, args.record_size, args.acks) == (
        "x",
        4,
        10,
        1000,
        -1,
    )
    assert (args.compression, args.batch_size, args.linger_ms, args.throughput, args.quiet) == (
        "lz4",
        65536,
        20,
        500,
        True,
    )


def test_bench_consume_flags(parser):
    parse = parser.parse_args
    args = parse(["bench", "consume"])
    assert args.topic == "bench" and args.num_records is None and args.from_beginning
    args = parse(
        [
            "bench",
            "consume",
            "--no-from-beginning",
            "--num-records",
            "7",
            "--fetch-max-bytes",
            "1024",
        ]
    )
    assert not args.from_beginning and args.num_records == 7 and args.fetch_max_bytes == 1024


def test_bootstrap_default_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("KRAFT_BOOTSTRAP", "envhost:19092")
    own = argparse.ArgumentParser()
    add_common_options(own)
    assert own.parse_args([]).bootstrap_server == "envhost:19092"
    monkeypatch.delenv("KRAFT_BOOTSTRAP")
    own = argparse.ArgumentParser()
    add_common_options(own)
    assert own.parse_args([]).bootstrap_server == "127.0.0.1:9095"
