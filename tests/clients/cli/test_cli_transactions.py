"""`kraft transactions list|describe|abort` against a fake admin: what is printed (table and JSON),
what is asked of the cluster, --help with examples, and refusals that read as help."""

from __future__ import annotations

import json

import pytest

from clients.cli import common
from clients.errors import ErrorCode, KraftError
from clients.txn_admin import TransactionDescription, TransactionListing
from clients.types import TopicPartition


class FakeTxnAdmin:
    def __init__(self) -> None:
        self.calls: list = []
        self.listed = [
            TransactionListing("app-1", 4000, "Ongoing", 1),
            TransactionListing("app-2", 4001, "CompleteCommit", 2),
        ]
        self.described = {
            "app-1": TransactionDescription(
                "app-1",
                1,
                "Ongoing",
                4000,
                3,
                60000,
                1_000,
                (TopicPartition("orders", 0), TopicPartition("orders", 2)),
            )
        }

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def list_transactions(self, states=None, producer_ids=None):
        self.calls.append(("list", states, producer_ids))
        return [
            t
            for t in self.listed
            if (not states or t.state in states)
            and (not producer_ids or t.producer_id in producer_ids)
        ]

    def describe_transactions(self, ids):
        self.calls.append(("describe", ids))
        if ids[0] not in self.described:
            raise KraftError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "no such id")
        return [self.described[i] for i in ids]

    def abort_transaction(self, topic, partition, producer_id, producer_epoch, coordinator_epoch=0):
        self.calls.append(
            ("abort", topic, partition, producer_id, producer_epoch, coordinator_epoch)
        )


@pytest.fixture
def admin(monkeypatch):
    fake = FakeTxnAdmin()
    monkeypatch.setattr(common, "make_admin", lambda bootstrap: fake)
    monkeypatch.setattr("clients.cli.transactions.time.time", lambda: 3.5)  # now: 3500 ms
    return fake


def test_list_table_and_json_with_filters(admin, cli, capsys):
    assert cli(["transactions", "list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TRANSACTIONAL-ID  COORDINATOR  PRODUCER-ID  STATE",
        "app-1                       1         4000  Ongoing",
        "app-2                       2         4001  CompleteCommit",
    ]
    assert (
        cli(
            [
                "transactions",
                "list",
                "--state",
                "Ongoing",
                "--producer-id",
                "4000",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == [
        {"transactional_id": "app-1", "coordinator": 1, "producer_id": 4000, "state": "Ongoing"}
    ]
    assert admin.calls[-1] == ("list", ["Ongoing"], [4000])
    assert cli(["transactions", "list", "--state", "PrepareAbort"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no transactions in state PrepareAbort" in captured.err


def test_describe_table_and_json(admin, cli, capsys):
    assert cli(["transactions", "describe", "app-1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TRANSACTIONAL-ID  app-1",
        "COORDINATOR       1",
        "STATE             Ongoing",
        "PRODUCER-ID       4000",
        "PRODUCER-EPOCH    3",
        "TIMEOUT-MS        60000",
        "START-TIME-MS     1000",
        "DURATION-MS       2500",
        "PARTITIONS        orders-0,orders-2",
    ]
    assert cli(["transactions", "describe", "app-1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "transactional_id": "app-1",
        "coordinator": 1,
        "state": "Ongoing",
        "producer_id": 4000,
        "producer_epoch": 3,
        "transaction_timeout_ms": 60000,
        "transaction_start_time_ms": 1000,
        "transaction_duration_ms": 2500,
        "partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 2}],
    }


def test_describe_an_unknown_id_is_one_line_of_help(admin, cli, capsys):
    assert cli(["transactions", "describe", "nope"]) == 1
    assert capsys.readouterr().err == (
        "error: transactional id 'nope' does not exist; see: kraft transactions list\n"
    )


def test_abort_writes_the_marker_through_the_admin(admin, cli, capsys):
    assert (
        cli(
            [
                "transactions",
                "abort",
                "--topic",
                "orders",
                "--partition",
                "2",
                "--producer-id",
                "4000",
                "--producer-epoch",
                "3",
            ]
        )
        == 0
    )
    assert admin.calls == [("abort", "orders", 2, 4000, 3, 0)]
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC   PARTITION  PRODUCER-ID  PRODUCER-EPOCH  STATUS",
        "orders          2         4000               3  ABORTED",
    ]
    assert (
        cli(
            [
                "transactions",
                "abort",
                "--topic",
                "orders",
                "--partition",
                "0",
                "--producer-id",
                "4000",
                "--producer-epoch",
                "3",
                "--coordinator-epoch",
                "7",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["status"] == "aborted"
    assert admin.calls[-1] == ("abort", "orders", 0, 4000, 3, 7)


@pytest.mark.parametrize(
    "argv, example",
    [
        (["transactions", "--help"], "kraft transactions describe app-1"),
        (["transactions", "list", "--help"], "kraft transactions list --state Ongoing"),
        (["transactions", "describe", "--help"], "kraft transactions describe app-1 --format json"),
        (["transactions", "abort", "--help"], "--producer-id 4000 --producer-epoch 3"),
    ],
)
def test_help_shows_examples(parser, capsys, argv, example):
    with pytest.raises(SystemExit) as done:
        parser.parse_args(argv)
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and example in out


def test_abort_needs_the_producer_named(parser, capsys):
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["transactions", "abort", "--topic", "orders", "--partition", "0"])
    assert done.value.code == 2
    assert "--producer-id" in capsys.readouterr().err
