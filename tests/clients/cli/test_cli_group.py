"""`kraft group` and `kraft consume --group` against fakes: what is printed (table and JSON), what
is asked of the cluster, and refusals that read as help."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def billing(fakes):
    fakes.admin.add_topic("orders", partitions=3)
    fakes.admin.add_group(
        "billing",
        members=(("m-1", "c1", [("orders", 0), ("orders", 1)]), ("m-2", "c2", [("orders", 2)])),
        offsets={("orders", 0): 4, ("orders", 1): 20},
    )
    return fakes


def test_list(billing, cli, capsys):
    billing.admin.add_group("audit", state="Empty")
    assert cli(["group", "list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "GROUP    STATE   COORDINATOR",
        "audit    Empty             1",
        "billing  Stable            1",
    ]
    assert cli(["group", "list", "--state", "Empty", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"group_id": "audit", "state": "Empty", "protocol_type": "consumer", "coordinator": 1}
    ]


def test_describe_table_joins_owners_offsets_and_lag(billing, cli, capsys):
    assert cli(["group", "describe", "billing"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:7] == [
        "GROUP        billing",
        "COORDINATOR  1",
        "STATE        Stable",
        "PROTOCOL     range",
        "GENERATION   3",
        "MEMBERS      2",
        "TOTAL-LAG    6",
    ]
    assert out[8:] == [
        "TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID  CLIENT-ID",
        "orders          0               4              10    6  m-1        c1",
        "orders          1              20              20    0  m-1        c1",
        "orders          2               -              30    -  m-2        c2",
    ]


def test_describe_json_has_state_members_and_offsets(billing, cli, capsys):
    assert cli(["group", "describe", "billing", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "Stable" and out["generation"] == 3
    assert [(m["member_id"], m["client_id"], m["partitions"]) for m in out["members"]] == [
        ("m-1", "c1", [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]),
        ("m-2", "c2", [{"topic": "orders", "partition": 2}]),
    ]
    assert out["offsets"][0] == {
        "topic": "orders",
        "partition": 0,
        "committed_offset": 4,
        "log_end_offset": 10,
        "lag": 6,
        "member_id": "m-1",
        "client_id": "c1",
    }


def test_describe_an_unknown_group_is_one_line_of_help(fakes, cli, capsys):
    assert cli(["group", "describe", "nope"]) == 1
    err = capsys.readouterr().err
    assert err == "error: group 'nope' does not exist; see: kraft group list\n"


def test_reset_offsets_is_refused_while_the_group_has_members(billing, cli, capsys):
    assert cli(["group", "reset-offsets", "billing", "--topic", "orders", "--to-earliest"]) == 1
    err = capsys.readouterr().err
    assert "group 'billing' is Stable with 2 member(s)" in err and "stop its consumers" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not [c for c in billing.admin.calls if c[0] == "alter-offsets"]


@pytest.mark.parametrize(
    "how, expect",
    [
        (["--to-earliest"], {0: 0, 1: 0, 2: 0}),
        (["--to-latest"], {0: 10, 1: 20, 2: 30}),
        (["--to-offset", "15"], {0: 10, 1: 15, 2: 15}),
        (["--to-datetime", "2026-11-22T08:00:00Z"], {0: 3, 1: 20, 2: 30}),
    ],
)
def test_reset_offsets_of_an_empty_group(billing, cli, capsys, how, expect):
    billing.admin.add_group("idle", state="Empty", offsets={("orders", 0): 4})
    billing.admin.time_offsets = {billing.TP("orders", 0): 3}
    assert cli(["group", "reset-offsets", "idle", "--topic", "orders", *how]) == 0
    [call] = [c for c in billing.admin.calls if c[0] == "alter-offsets"]
    assert call == (
        "alter-offsets",
        "idle",
        {billing.TP("orders", p): o for p, o in expect.items()},
    )
    out = capsys.readouterr()
    assert out.out.splitlines()[1].split() == ["orders", "0", "4", str(expect[0])]
    assert "reset the offsets of group idle" in out.err


def test_reset_offsets_dry_run_changes_nothing_and_partitions_can_be_chosen(billing, cli, capsys):
    billing.admin.add_group("idle", state="Empty")
    assert (
        cli(
            [
                "group",
                "reset-offsets",
                "idle",
                "--topic",
                "orders:1,2",
                "--to-latest",
                "--dry-run",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {
        "group_id": "idle",
        "dry_run": True,
        "offsets": [
            {"topic": "orders", "partition": 1, "old_offset": None, "new_offset": 20},
            {"topic": "orders", "partition": 2, "old_offset": None, "new_offset": 30},
        ],
    }
    assert not [c for c in billing.admin.calls if c[0] == "alter-offsets"]
    assert cli(["group", "reset-offsets", "idle", "--topic", "orders:7", "--to-latest"]) == 1
    assert "has no partition 7" in capsys.readouterr().err
    assert cli(["group", "reset-offsets", "idle", "--topic", "ghost", "--to-latest"]) == 1
    assert "kraft topic create ghost" in capsys.readouterr().err


def test_reset_offsets_needs_exactly_one_target(billing, cli, capsys):
    with pytest.raises(SystemExit):
        cli(["group", "reset-offsets", "idle", "--topic", "orders"])
    with pytest.raises(SystemExit):
        cli(["group", "reset-offsets", "idle", "--topic", "orders", "--to-latest", "--to-earliest"])
    with pytest.raises(SystemExit):
        cli(["group", "reset-offsets", "idle", "--topic", "orders", "--to-datetime", "soon"])


def test_delete_reports_each_group(billing, cli, capsys):
    billing.admin.add_group("idle", state="Empty")
    assert cli(["group", "delete", "idle", "billing", "ghost"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "GROUP    STATUS",
        "idle     DELETED",
        "billing  group 'billing' has active members",
        "ghost    group 'ghost' does not exist (see: kraft group list)",
    ]
    assert "idle" not in billing.admin.groups


def test_every_group_command_shows_an_example(parser, capsys):
    for command in ("list", "describe", "reset-offsets", "delete"):
        with pytest.raises(SystemExit):
            parser.parse_args(["group", command, "--help"])
        assert "examples:\n  kraft group " + command in capsys.readouterr().out


def test_consume_with_a_group_subscribes_instead_of_assigning(fakes, cli, capsysbinary):
    fakes.consumer_options = {
        "partitions": [0, 1],
        "records": [fakes.Record("t", 1, 0, 1, None, b"v", [])],
    }
    assert cli(["consume", "t", "--group", "g", "--from-beginning", "--max-messages", "1"]) == 0
    assert capsysbinary.readouterr().out == b"v\n"
    c = fakes.consumer
    assert c.subscribed == ["t"] and c.seeks == [] and c.closed
    assert c.config["group_id"] == "g" and c.config["auto_offset_reset"] == "earliest"


def test_consume_group_refuses_partitions_and_offsets(fakes, cli, capsys):
    assert cli(["consume", "t", "--group", "g", "--partition", "0"]) == 1
    assert "--partition and --offset N do not apply" in capsys.readouterr().err
    assert cli(["consume", "t", "--group", "g", "--offset", "5"]) == 1
    assert "kraft group reset-offsets g --topic t --to-offset N" in capsys.readouterr().err
