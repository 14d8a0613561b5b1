"""`kraft topic describe` shows what each partition's leader says of its offsets and replicas, and
`kraft topic elect-leaders` asks the controller for elections, printing one row per partition and
failing only on real failures (ELECTION_NOT_NEEDED is not one)."""

from __future__ import annotations

import json

import pytest

from clients.errors import ErrorCode

NOT_NEEDED = ErrorCode.ELECTION_NOT_NEEDED


def partitions_section(out: str) -> list[str]:
    return out.split("PARTITIONS\n", 1)[1].splitlines()


def test_describe_table_shows_offsets_and_each_replica_log_end(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=2, replicas=[1, 2, 3])
    assert cli(["topic", "describe", "orders"]) == 0
    assert partitions_section(capsys.readouterr().out) == [
        "PARTITION  LEADER  EPOCH  REPLICAS  ISR    LOG-START  HIGH-WATERMARK  LOG-END  "
        "REPLICA-LOG-ENDS",
        "        0       1      3  1,2,3     1,2,3          0              10       12  "
        "1:12,2:12,3:9",
        "        1       1      3  1,2,3     1,2,3          0              20       22  "
        "1:22,2:22,3:19",
    ]


def test_describe_leaves_offsets_blank_and_warns_when_a_leader_cannot_answer(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=2, replicas=[1, 2])
    fakes.admin.replication[fakes.TP("orders", 1)] = fakes.PartitionReplication(
        "orders",
        1,
        ErrorCode.NETWORK_EXCEPTION,
        "broker 1: node unreachable",
        "",
        -1,
        -1,
        -1,
        -1,
        {},
    )
    assert cli(["topic", "describe", "orders", "--format", "json"]) == 0
    captured = capsys.readouterr()
    first, second = json.loads(captured.out)["partitions"]
    assert first["high_watermark"] == 10
    assert (second["leader"], second["isr"]) == (1, [1, 2])  # metadata still shows
    assert [
        second[k]
        for k in ("high_watermark", "log_start_offset", "log_end_offset", "replica_log_end_offsets")
    ] == [None, None, None, {}]
    assert captured.err == ("warning: orders-1: offsets unknown: broker 1: node unreachable\n")


def test_describe_does_not_pass_off_a_follower_view_as_the_leader(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=1, replicas=[1, 2])
    fakes.admin.replication[fakes.TP("orders", 0)] = fakes.PartitionReplication(
        "orders", 0, 0, "", "follower", 2, 5, 7, 0, {}
    )
    assert cli(["topic", "describe", "orders", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["partitions"][0]["high_watermark"] is None
    assert "leadership is moving (to broker 2)" in captured.err


def test_elect_leaders_of_a_topic_asks_for_each_partition_preferred_by_default(fakes, cli, capsys):
    fakes.admin.add_topic("orders", partitions=2, replicas=[1, 2])
    assert cli(["topic", "elect-leaders", "orders"]) == 0
    assert fakes.admin.calls == [("elect", "preferred", [("orders", 0), ("orders", 1)])]
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC   PARTITION  STATUS   DETAIL",
        "orders          0  ELECTED  -",
        "orders          1  ELECTED  -",
    ]


def test_elect_leaders_takes_single_partitions_once_each_and_the_unclean_type(fakes, cli):
    fakes.admin.add_topic("orders", partitions=3)
    assert (
        cli(["topic", "elect-leaders", "orders:2", "orders:2", "payments:0", "--type", "unclean"])
        == 0
    )
    assert fakes.admin.calls == [("elect", "unclean", [("orders", 2), ("payments", 0)])]


def test_not_needed_is_success_and_a_failure_exits_1(fakes, cli, capsys):
    fakes.admin.election_results = [
        fakes.ElectionResult(
            "orders", 0, NOT_NEEDED, "orders-0: the preferred replica 1 already leads"
        ),
        fakes.ElectionResult("orders", 1),
    ]
    assert cli(["topic", "elect-leaders", "orders:0", "orders:1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "topic": "orders",
            "partition": 0,
            "status": "not-needed",
            "error": "ELECTION_NOT_NEEDED",
            "message": "orders-0: the preferred replica 1 already leads",
        },
        {"topic": "orders", "partition": 1, "status": "elected", "error": None, "message": None},
    ]
    fakes.admin.election_results.append(
        fakes.ElectionResult(
            "orders",
            2,
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "orders-2: replica 3 is not in the ISR",
        )
    )
    assert cli(["topic", "elect-leaders", "orders:0", "orders:1", "orders:2"]) == 1
    assert (
        "orders          2  FAILED      orders-2: replica 3 is not in the ISR"
        in capsys.readouterr().out
    )


def test_all_topics_asks_for_every_partition_and_says_when_nothing_moved(fakes, cli, capsys):
    fakes.admin.election_results = []
    assert cli(["topic", "elect-leaders", "--all-topics"]) == 0
    assert fakes.admin.calls == [("elect", "preferred", None)]
    assert (
        capsys.readouterr().out
        == "no partition needed an election: every one is led by its preferred replica\n"
    )


@pytest.mark.parametrize(
    "argv, problem", [([], "not neither"), (["orders", "--all-topics"], "not both")]
)
def test_partitions_or_all_topics_exactly_one(fakes, cli, capsys, argv, problem):
    assert cli(["topic", "elect-leaders", *argv]) == 1
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1
    assert fakes.admin.calls == []


def test_a_missing_topic_says_how_to_create_it(fakes, cli, capsys):
    assert cli(["topic", "elect-leaders", "ghost"]) == 1
    assert (
        capsys.readouterr().err
        == "error: topic 'ghost' does not exist; create it with: kraft topic create ghost\n"
    )


def test_a_malformed_partition_is_a_usage_error(fakes, parser, capsys):
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["topic", "elect-leaders", "orders:x"])
    assert info.value.code == 2
    assert (
        "expected TOPIC or TOPIC:PARTITION (e.g. orders:0), got 'orders:x'"
        in capsys.readouterr().err
    )
