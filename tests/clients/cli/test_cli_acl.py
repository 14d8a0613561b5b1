"""`kraft acl add|remove|list` with kafka-acls' options against a fake admin: which ACLs and
filters are sent, what is printed, and what needs --force."""

from __future__ import annotations

import json

import pytest

from clients.acl_admin import AclEntry, AclFilter
from clients.cli import common


class FakeAclAdmin:
    def __init__(self):
        self.acls: list[AclEntry] = []
        self.filters: list[AclFilter] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def create_acls(self, entries):
        self.acls += [e for e in entries if e not in self.acls]

    def delete_acls(self, filters):
        self.filters += filters
        gone = [a for a in self.acls if any(f.resource_name == a.resource_name for f in filters)]
        self.acls = [a for a in self.acls if a not in gone]
        return gone

    def describe_acls(self, acl_filter):
        self.filters.append(acl_filter)
        return list(self.acls)


@pytest.fixture
def admin(monkeypatch):
    fake = FakeAclAdmin()
    monkeypatch.setattr(common, "make_admin", lambda bootstrap: fake)
    return fake


def test_add_makes_one_acl_per_principal_resource_and_operation(admin, cli, capsys):
    assert (
        cli(
            [
                "acl",
                "add",
                "--allow-principal",
                "User:alice",
                "--allow-principal",
                "User:bob",
                "--operation",
                "read",
                "--operation",
                "Describe",
                "--topic",
                "logs-",
                "--resource-pattern-type",
                "prefixed",
                "--cluster",
            ]
        )
        == 0
    )
    assert len(admin.acls) == 8
    assert AclEntry("Topic", "logs-", "User:bob", "Read", "Allow", "*", "Prefixed") in admin.acls
    # The cluster is one literal resource whatever the pattern of the others.
    assert (
        AclEntry("Cluster", "kafka-cluster", "User:alice", "Describe", "Allow", "*", "Literal")
        in admin.acls
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "PRINCIPAL",
        "HOST",
        "OPERATION",
        "PERMISSION",
        "RESOURCE-TYPE",
        "RESOURCE-NAME",
        "PATTERN",
    ]


def test_deny_with_a_host_and_the_default_operation_all(admin, cli):
    assert (
        cli(
            [
                "acl",
                "add",
                "--deny-principal",
                "User:mallory",
                "--deny-host",
                "10.0.0.9",
                "--group",
                "billing",
            ]
        )
        == 0
    )
    assert admin.acls == [
        AclEntry("Group", "billing", "User:mallory", "All", "Deny", "10.0.0.9", "Literal")
    ]


def test_add_names_what_is_missing(admin, cli, capsys):
    assert cli(["acl", "add", "--allow-principal", "User:alice"]) == 1
    assert "--topic" in capsys.readouterr().err
    assert (
        cli(["acl", "add", "--topic", "t", "--operation", "Eat", "--allow-principal", "User:a"])
        == 1
    )
    assert "operation 'Eat' is unknown" in capsys.readouterr().err


def test_remove_needs_force_when_it_cannot_ask(admin, cli, capsys, monkeypatch):
    admin.create_acls([AclEntry("Topic", "orders", "User:alice", "Write")])
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert cli(["acl", "remove", "--topic", "orders"]) == 1
    assert "--force" in capsys.readouterr().err and admin.acls
    assert cli(["acl", "remove", "--topic", "orders", "--force", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["principal"] == "User:alice"
    assert admin.filters == [AclFilter("Topic", "orders", None, "Any", "Any", None, "Literal")]


def test_list_filters_by_resource_and_principal(admin, cli, capsys):
    admin.create_acls([AclEntry("Topic", "orders", "User:alice", "Write")])
    assert (
        cli(
            [
                "acl",
                "list",
                "--topic",
                "orders",
                "--resource-pattern-type",
                "match",
                "--principal",
                "User:alice",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert admin.filters == [AclFilter("Topic", "orders", "User:alice", pattern_type="Match")]
    assert json.loads(capsys.readouterr().out)[0]["operation"] == "Write"
