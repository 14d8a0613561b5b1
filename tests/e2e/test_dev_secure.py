"""`kraft dev --secure --controllers 3 --brokers 3`: six real nodes talking mTLS to each other;
the admin (password in DATA/client.properties) creates a topic, produces and consumes over
SASL_SSL with the Python clients and the kraft command, adds and lists a user, who then sees
nothing without ACLs; users alice and bob, each granted their own prefix, produce and consume
there and are refused the other's topic; a transaction commits across partitions led by
different brokers; a wrong password is refused with SASL_AUTHENTICATION_FAILED and a plaintext
client gets nothing."""

from __future__ import annotations

import json
import os
import signal

import pytest

from clients.admin import Admin
from clients.consumer import Consumer
from clients.errors import ErrorCode, KraftError
from clients.producer import Producer
from clients.security import load_command_config, security_options
from clients.types import TopicPartition
from entry.dev_cluster import is_kraft_process

pytestmark = pytest.mark.e2e


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "cluster"
    yield d
    if (d / "cluster.json").exists():
        doc = json.loads((d / "cluster.json").read_text())
        for pid in [doc.get("supervisor_pid")] + [n["pid"] for n in doc["nodes"]]:
            if pid and is_kraft_process(pid):
                os.kill(pid, signal.SIGKILL)


def test_admin_produces_and_consumes_over_sasl_ssl(data, kraft):
    started = kraft(
        "dev",
        "--secure",
        "--controllers",
        "3",
        "--brokers",
        "3",
        "--port",
        "0",
        "--detach",
        "--data",
        str(data),
        timeout=180,
    )
    assert started.returncode == 0, started.stderr
    assert "--command-config" in started.stdout
    doc = json.loads((data / "cluster.json").read_text())
    bootstrap = ",".join(n["address"] for n in doc["nodes"] if n["roles"] == ["broker"])
    config = str(data / "client.properties")
    assert oct((data / "client.properties").stat().st_mode & 0o777) == "0o600"
    admin_security = security_options(load_command_config(config))

    with Admin(bootstrap, **admin_security) as admin:
        admin.create_topics([_new_topic("secure-orders")])
    with Producer(bootstrap, acks="all", **admin_security) as producer:
        for i in range(100):
            producer.send("secure-orders", value=f"order-{i}".encode())
        producer.flush()
    with Consumer(
        bootstrap, group_id="secure-group", auto_offset_reset="earliest", **admin_security
    ) as consumer:
        consumer.subscribe(["secure-orders"])
        seen = []
        for _ in range(50):
            seen += [r.value for r in consumer.poll(1000)]
            if len(seen) >= 100:
                break
    assert sorted(seen) == sorted(f"order-{i}".encode() for i in range(100))

    # A transaction over its three partitions: each leader checks the transaction's first batch
    # with the coordinator (KIP-890); the leaders spread over the brokers, so the ones not
    # coordinating ask over the brokers' mTLS, as nodes.
    with Producer(bootstrap, transactional_id="secure-etl", **admin_security) as producer:
        producer.init_transactions(60)
        producer.begin_transaction()
        for partition in range(3):
            producer.send("secure-orders", value=b"txn", partition=partition)
        producer.commit_transaction(60)
    with Consumer(
        bootstrap, isolation_level="read_committed", auto_offset_reset="earliest", **admin_security
    ) as consumer:
        consumer.assign([TopicPartition("secure-orders", p) for p in range(3)])
        committed = []
        for _ in range(50):
            committed += [r.value for r in consumer.poll(1000) if r.value == b"txn"]
            if len(committed) >= 3:
                break
    assert committed == [b"txn"] * 3

    # The kraft command with --command-config: users and the same topic.
    added = kraft(
        "user",
        "add",
        "bob",
        "--password-stdin",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        config,
        input="bob-secret\n",
    )
    assert added.returncode == 0, added.stderr
    listed = kraft(
        "user",
        "list",
        "--format",
        "json",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        config,
    )
    assert {u["user"] for u in json.loads(listed.stdout)} == {"admin", "bob"}
    consumed = kraft(
        "consume",
        "secure-orders",
        "--from-beginning",
        "--max-messages",
        "3",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        config,
    )
    assert consumed.returncode == 0 and len(consumed.stdout.splitlines()) == 3, consumed.stderr
    quorum = kraft(
        "quorum",
        "describe",
        "--format",
        "json",
        "--bootstrap-controller",
        ",".join(n["address"] for n in doc["nodes"] if n["roles"] == ["controller"]),
        "--command-config",
        str(data / "admin-tls.properties"),
    )
    assert quorum.returncode == 0, quorum.stderr

    # bob is authenticated as User:bob and is no super user: the ACLs (none for him) refuse.
    bob = {**admin_security, "sasl_plain_username": "bob", "sasl_plain_password": "bob-secret"}
    with Admin(bootstrap, **bob) as admin:
        assert "secure-orders" not in admin.list_topics()

    # alice and bob, each allowed their own prefix of topics and groups: each writes and reads
    # there, neither can touch the other's topic, and Metadata shows each only their own.
    added = kraft(
        "user",
        "add",
        "alice",
        "--password-stdin",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        config,
        input="alice-secret\n",
    )
    assert added.returncode == 0, added.stderr
    with Admin(bootstrap, **admin_security) as admin:
        admin.create_topics([_new_topic("alice-orders"), _new_topic("bob-orders")])
    for user in ("alice", "bob"):
        for resource in (("--topic", f"{user}-"), ("--group", f"{user}-")):
            granted = kraft(
                "acl",
                "add",
                "--allow-principal",
                f"User:{user}",
                "--operation",
                "All",
                *resource,
                "--resource-pattern-type",
                "prefixed",
                "--bootstrap-server",
                bootstrap,
                "--command-config",
                config,
            )
            assert granted.returncode == 0, granted.stderr
    alice = {
        **admin_security,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    users = {"alice": alice, "bob": bob}
    for user, security in users.items():
        other = "bob" if user == "alice" else "alice"
        with Producer(bootstrap, acks="all", **security) as producer:
            futures = [
                producer.send(f"{user}-orders", value=f"{user}-{i}".encode()) for i in range(20)
            ]
            refused = producer.send(f"{other}-orders", value=b"trespass")
            producer.flush()
        assert all(f.exception() is None for f in futures), [f.exception() for f in futures]
        assert refused.exception() is not None
        assert refused.exception().code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        with Consumer(
            bootstrap, group_id=f"{user}-group", auto_offset_reset="earliest", **security
        ) as consumer:
            consumer.subscribe([f"{user}-orders"])
            seen = []
            for _ in range(50):
                seen += [r.value for r in consumer.poll(1000)]
                if len(seen) >= 20:
                    break
        assert sorted(seen) == sorted(f"{user}-{i}".encode() for i in range(20))
        with Admin(bootstrap, **security) as admin:
            assert set(admin.list_topics()) == {f"{user}-orders"}

    # A wrong password, and no TLS at all: refused.
    with pytest.raises(KraftError) as info:
        with Admin(bootstrap, **{**admin_security, "sasl_plain_password": "wrong"}) as admin:
            admin.list_topics()
    assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    plaintext = kraft("topic", "list", "--bootstrap-server", bootstrap)
    assert plaintext.returncode == 1

    stopped = kraft("dev", "--stop", "--data", str(data))
    assert stopped.returncode == 0, stopped.stderr


def _new_topic(name):
    from clients.admin import NewTopic

    return NewTopic(name, num_partitions=3, replication_factor=3)
