"""ACLs on a real node: internal topics refuse deletion and reconfiguration even with no
authorizer; with one, anonymous callers can no longer delete topics or groups or add ACLs; ACLs
added by a super user survive a restart of the controller (replayed from the metadata log)."""

from __future__ import annotations

import json

import pytest

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.errors import ErrorCode, KraftError
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def refused(call, code):
    with pytest.raises(KraftError) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value.message


def test_acls_protect_topics_groups_and_internal_topics_across_restarts(node_factory, kraft):
    first = node_factory("node1").start()
    with Admin(first.address) as admin:
        admin.create_topics([NewTopic("orders", 1)])
        admin.alter_group_offsets("billing", {TopicPartition("orders", 0): 0})
        # No authorizer: anyone may do anything, except to the cluster's own topics.
        assert "internal" in refused(
            lambda: admin.delete_topics(["__consumer_offsets"]), ErrorCode.POLICY_VIOLATION
        )
        for key, value in (("retention.ms", "1000"), ("cleanup.policy", "delete")):
            refused(
                lambda: admin.alter_configs("__consumer_offsets", set={key: value}),
                ErrorCode.POLICY_VIOLATION,
            )
        assert "__consumer_offsets" in admin.list_topics(include_internal=True)
    first.stop()

    guarded = node_factory("node1", [AUTHORIZER]).start()
    with Admin(guarded.address) as admin:
        message = refused(
            lambda: admin.delete_topics(["orders"]), ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        assert "User:ANONYMOUS" in message and "kraft acl add" in message
        refused(lambda: admin.delete_groups(["billing"]), ErrorCode.GROUP_AUTHORIZATION_FAILED)
    added = kraft(
        "acl",
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        "orders",
        "--bootstrap-server",
        guarded.address,
    )
    assert added.returncode != 0 and "CLUSTER_AUTHORIZATION_FAILED" in added.stderr
    guarded.stop()

    overrides = [
        AUTHORIZER,
        "super.users=User:ANONYMOUS",
        "metadata.log.snapshot.interval.records=2",
    ]
    admin_node = node_factory("node1", overrides).start()
    bs = ("--bootstrap-server", admin_node.address)
    for args in (
        ("--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"),
        (
            "--allow-principal",
            "User:bob",
            "--operation",
            "Read",
            "--topic",
            "logs-",
            "--resource-pattern-type",
            "prefixed",
            "--group",
            "billing",
        ),
    ):
        done = kraft("acl", "add", *args, *bs)
        assert done.returncode == 0, done.stderr
    admin_node.stop()

    restarted = node_factory("node1", overrides).start()
    listed = kraft("acl", "list", "--format", "json", "--bootstrap-server", restarted.address)
    assert listed.returncode == 0, listed.stderr
    assert sorted(
        (a["principal"], a["operation"], a["resource_type"], a["resource_name"], a["pattern_type"])
        for a in json.loads(listed.stdout)
    ) == [
        ("User:alice", "Write", "Topic", "orders", "Literal"),
        ("User:bob", "Read", "Group", "billing", "Prefixed"),
        ("User:bob", "Read", "Topic", "logs-", "Prefixed"),
    ]
    removed = kraft(
        "acl",
        "remove",
        "--topic",
        "orders",
        "--force",
        "--format",
        "json",
        "--bootstrap-server",
        restarted.address,
    )
    assert removed.returncode == 0, removed.stderr
    assert [a["principal"] for a in json.loads(removed.stdout)] == ["User:alice"]


def test_a_cluster_of_processes_with_an_authorizer_replicates_when_its_nodes_are_super_users(
    cluster_factory,
):
    # Nodes are User:ANONYMOUS until listeners authenticate: registration, heartbeats, follower
    # fetches and ISR changes pass the ClusterAction checks as super users.
    cluster = cluster_factory(
        controllers=1,
        brokers=2,
        authorizer_class_name=AUTHORIZER.split("=", 1)[1],
        super_users="User:ANONYMOUS",
    )
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("orders", 1, 2)])
    with Producer(cluster.bootstrap, acks="all") as producer:
        producer.send("orders", b"v").result(timeout=30)
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        records = []
        for _ in range(50):
            records += consumer.poll(timeout_ms=200)
            if records:
                break
    assert [r.value for r in records] == [b"v"]
