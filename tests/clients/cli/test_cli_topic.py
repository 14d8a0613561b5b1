"""`kraft topic` against a fake Admin: what is asked of the cluster, what is printed, and that a
missing topic reads as help."""

from __future__ import annotations

import json


def test_create_passes_partitions_replicas_and_configs(fakes, cli, capsys):
    code = cli(["topic", "create", "a", "b", "-p", "3", "-r", "2", "-c", "retention.ms=10"])
    assert code == 0
    created = [c[1] for c in fakes.admin.calls if c[0] == "create"]
    assert [(t.name, t.num_partitions, t.replication_factor, t.configs) for t in created] == [
        ("a", 3, 2, {"retention.ms": "10"}),
        ("b", 3, 2, {"retention.ms": "10"}),
    ]
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC  STATUS",
        "a      CREATED",
        "b      CREATED",
    ]


def test_create_reports_each_failure_and_exits_1(fakes, cli, capsys):
    fakes.admin.add_topic("a")
    assert cli(["topic", "create", "a", "b", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out == [
        {"name": "a", "status": "error", "error": "topic 'a' already exists"},
        {"name": "b", "status": "created", "error": None},
    ]


def test_list_hides_internal_topics_unless_asked(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=12, replicas=[1, 2, 3])
    fakes.admin.add_topic("__consumer_offsets", partitions=50, internal=True)
    assert cli(["topic", "list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "NAME    PARTITIONS  REPLICAS",
        "orders          12         3",
    ]
    assert cli(["topic", "list", "--internal", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"name": "__consumer_offsets", "partitions": 50, "replicas": 1},
        {"name": "orders", "partitions": 12, "replicas": 3},
    ]


def test_describe_json_has_partitions_offsets_and_configs(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=2, replicas=[2, 1])
    assert cli(["topic", "describe", "orders", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "orders" and out["configs"] == {"retention.ms": "604800000"}
    assert out["partitions"] == [
        {
            "partition": 0,
            "leader": 2,
            "leader_epoch": 3,
            "replicas": [2, 1],
            "isr": [2, 1],
            "high_watermark": 10,
            "log_start_offset": 0,
            "log_end_offset": 12,
            "replica_log_end_offsets": {"1": 9, "2": 12},
        },
        {
            "partition": 1,
            "leader": 2,
            "leader_epoch": 3,
            "replicas": [2, 1],
            "isr": [2, 1],
            "high_watermark": 20,
            "log_start_offset": 0,
            "log_end_offset": 22,
            "replica_log_end_offsets": {"1": 19, "2": 22},
        },
    ]


def test_describe_table_shows_summary_configs_and_partitions(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=1, replicas=[1])
    assert cli(["topic", "describe", "orders"]) == 0
    out = capsys.readouterr().out
    assert "PARTITION  LEADER  EPOCH  REPLICAS  ISR  LOG-START  HIGH-WATERMARK  LOG-END" in out
    assert "retention.ms  604800000  DEFAULT" in out
    assert out.startswith("SUMMARY\nNAME        orders\n")


def test_describe_missing_topic_says_how_to_create_it(fakes, cli, capsys):
    assert cli(["topic", "describe", "orders"]) == 1
    assert (
        capsys.readouterr().err
        == "error: topic 'orders' does not exist; create it with: kraft topic create orders\n"
    )


def test_alter_sets_deletes_and_grows(fakes, cli, capsys):
    fakes.admin.add_topic("orders")
    assert (
        cli(["topic", "alter", "orders", "--set", "a=1", "--delete", "b", "--partitions", "4"]) == 0
    )
    assert ("alter", "orders", {"a": "1"}, ["b"]) in fakes.admin.calls
    assert ("partitions", {"orders": 4}) in fakes.admin.calls
    assert capsys.readouterr().out == "altered topic orders: set a=1; deleted b; partitions now 4\n"


def test_alter_without_changes_is_an_error(fakes, cli, capsys):
    assert cli(["topic", "alter", "orders"]) == 1
    assert "nothing to change" in capsys.readouterr().err
    assert fakes.admin.calls == []


def test_delete_reports_missing_topics(fakes, cli, capsys):
    fakes.admin.add_topic("a")
    assert cli(["topic", "delete", "a", "zzz"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC  STATUS",
        "a      DELETED",
        "zzz    topic 'zzz' does not exist",
    ]
    assert "a" not in fakes.admin.topics
