"""Consumer groups on real nodes: 3 members split a 6-partition topic 2/2/2; a member that closes
or is killed -9 has its partitions moved within the session timeout; a clean rebalance with
manual commits neither skips nor repeats a record; committed offsets survive kill -9 of the
coordinator's broker; and `kraft group list|describe|reset-offsets|delete` as a user runs them."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer, ConsumerRebalanceListener
from clients.errors import KraftError
from clients.producer import Producer
from clients.types import TopicPartition as TP

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e

SESSION_MS = 3000
# Broker settings for short tests: no initial rebalance delay, sessions as short as SESSION_MS.
GROUP_NODE = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "3",
}
MEMBER = dict(
    session_timeout_ms=SESSION_MS,
    heartbeat_interval_ms=300,
    auto_offset_reset="earliest",
    fetch_max_wait_ms=100,
)
ALL = {TP("t", p) for p in range(6)}


def single_node(node_factory):
    node = node_factory(
        "node1",
        [f"{k}={v}" for k, v in {**GROUP_NODE, "offsets.topic.replication.factor": "1"}.items()],
    )
    node.start()
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("t", num_partitions=6)])
    return node


class Member(threading.Thread):
    """A blocking consumer of group `group` in its own thread: polls, keeps what it read,
    commits after each poll when `manual` (and in the revocation listener), until closed."""

    def __init__(
        self, bootstrap: str, name: str, group: str = "g", manual: bool = False, **settings
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.manual = bootstrap, group, manual
        self.settings = {**MEMBER, **settings}
        self.records: list = []
        self.assigned: set = set()
        self.revocations = 0
        self.commit_errors: list = []
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self._stopping = threading.Event()
        self.consumer: Consumer | None = None

    def run(self) -> None:
        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, partitions):
                if member.manual:
                    member.consumer.commit()
                member.assigned = set()
                member.revocations += 1

            def on_partitions_assigned(self, partitions):
                member.assigned = set(partitions)

        try:
            with Consumer(
                self.bootstrap,
                group_id=self.group,
                client_id=self.name,
                enable_auto_commit=not self.manual,
                **self.settings,
            ) as c:
                self.consumer = c
                c.subscribe(["t"], listener=Listener())
                self.ready.set()
                while not self._stopping.is_set():
                    records = c.poll(timeout_ms=100)
                    self.records += [(r.partition, r.offset) for r in records]
                    if records and self.manual:
                        try:
                            c.commit()
                        except KraftError as exc:  # as an application would: log, go on
                            self.commit_errors.append(exc)
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            self.error = exc
            self.ready.set()

    def close(self) -> None:
        self._stopping.set()
        self.join(30)
        assert not self.is_alive() and self.error is None, self.error


def produce(bootstrap: str, n: int, start: int = 0) -> None:
    with Producer(bootstrap, acks=-1, linger_ms=2) as p:
        for i in range(start, start + n):
            p.send("t", b"%d" % i, partition=i % 6)
        p.flush(timeout=30)


def shares(members) -> list[int]:
    return sorted(len(m.assigned) for m in members)


def test_three_members_split_six_partitions_and_a_closed_members_share_moves(node_factory):
    node = single_node(node_factory)
    members = [Member(node.address, f"c{i}") for i in range(3)]
    for m in members:
        m.start()
    try:
        eventually(
            lambda: (
                shares(members) == [2, 2, 2] and set().union(*(m.assigned for m in members)) == ALL
            ),
            30,
            "a 2/2/2 split",
        )
        members[0].close()
        started = time.monotonic()
        eventually(lambda: shares(members[1:]) == [3, 3], 30, "the leaver's share moved")
        # A LeaveGroup: no need to wait out the session.
        assert time.monotonic() - started < SESSION_MS / 1000
    finally:
        for m in members[1:]:
            m.close()


def test_a_static_member_restarting_within_its_session_causes_no_rebalance(node_factory):
    node = single_node(node_factory)
    static = dict(group_instance_id="worker-1", session_timeout_ms=10_000)
    first = Member(node.address, "s", **static)
    other = Member(node.address, "d", session_timeout_ms=10_000)
    first.start()
    other.start()
    restarted = None
    try:
        eventually(lambda: shares([first, other]) == [3, 3], 30, "a 3/3 split")
        with Admin(node.address) as admin:
            generation = admin.describe_groups(["g"])[0].generation
            owned, revocations = set(first.assigned), other.revocations
            first.close()  # a static member sends no LeaveGroup
            restarted = Member(node.address, "s", **static)
            restarted.start()
            eventually(lambda: restarted.assigned == owned, 30, "its partitions back")
            [after] = admin.describe_groups(["g"])
        assert after.generation == generation and after.state == "Stable"
        assert other.revocations == revocations  # the other member never gave anything up
    finally:
        for m in (other, restarted):
            if m is not None:
                m.close()


MEMBER_SCRIPT = (
    """
import sys
from clients.consumer import Consumer
with Consumer(sys.argv[1], group_id="g", client_id="doomed", session_timeout_ms=%d,
              heartbeat_interval_ms=300, auto_offset_reset="earliest") as c:
    c.subscribe(["t"])
    while True:
        c.poll(timeout_ms=100)
"""
    % SESSION_MS
)


def test_a_killed_members_partitions_move_within_the_session_timeout(node_factory):
    node = single_node(node_factory)
    doomed = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SCRIPT, node.address],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    members = [Member(node.address, f"c{i}") for i in range(2)]
    try:
        for m in members:
            m.start()
        eventually(lambda: shares(members) == [2, 2], 30, "a 2/2/2 split with the subprocess")
        doomed.kill()  # SIGKILL: no LeaveGroup
        doomed.wait(10)
        killed = time.monotonic()
        eventually(lambda: shares(members) == [3, 3], 30, "the killed member's share moved")
        moved_s = time.monotonic() - killed
        # Detected at the session timeout, then one rebalance (heartbeats every 300 ms).
        assert moved_s < SESSION_MS / 1000 + 3, moved_s
    finally:
        if doomed.poll() is None:
            doomed.kill()
        for m in members:
            m.close()


def test_a_clean_rebalance_with_manual_commits_skips_and_repeats_nothing(node_factory):
    node = single_node(node_factory)
    a = Member(node.address, "a", manual=True)
    a.start()
    produce(node.address, 600)
    eventually(lambda: len(a.records) == 600, 30, "a reading alone")
    b = Member(node.address, "b", manual=True)
    b.start()
    eventually(lambda: shares([a, b]) == [3, 3], 30, "a 3/3 split")
    produce(node.address, 600, start=600)
    eventually(lambda: len(a.records) + len(b.records) == 1200, 30, "both reading")
    a.close()  # a clean leave: b takes everything
    produce(node.address, 600, start=1200)
    c = Member(node.address, "c", manual=True)
    c.start()
    eventually(lambda: shares([b, c]) == [3, 3], 30, "b and c sharing")
    produce(node.address, 600, start=1800)
    read = lambda: a.records + b.records + c.records  # noqa: E731
    eventually(lambda: len(read()) >= 2400, 30, "every record read")
    time.sleep(1)  # anything read twice would show by now
    b.close()
    c.close()
    got = read()
    assert len(got) == len(set(got)) == 2400
    assert set(got) == {(p, o) for p in range(6) for o in range(400)}
    assert len(a.records) >= 600 and len(c.records) > 0


def failover_cluster(cluster_factory):
    """1 controller and 3 brokers that fence a dead broker within 3 s; `t` has 6 partitions of
    3 replicas, and so has each `__consumer_offsets` partition."""
    cluster = cluster_factory(
        1,
        3,
        **{
            k.replace(".", "_"): v
            for k, v in {
                **GROUP_NODE,
                "offsets.topic.replication.factor": "3",
                "min.insync.replicas": "2",
                "broker.session.timeout.ms": "3000",
                "broker.heartbeat.interval.ms": "300",
                "replica.lag.time.max.ms": "3000",
                "controller.quorum.fetch.timeout.ms": "1000",
                "controller.quorum.election.timeout.ms": "300",
            }.items()
        },
    )
    with Admin(cluster.bootstrap) as admin:
        eventually(lambda: len(admin.describe_cluster()["brokers"]) == 3, 30, "3 brokers")
        admin.create_topics([NewTopic("t", num_partitions=6, replication_factor=3)])
    return cluster


def new_coordinator(admin: Admin, victim: int):
    """The group's description once a broker other than `victim` answers for it, else None."""
    try:
        [desc] = admin.describe_groups(["g"])
    except Exception:
        return None
    return desc if desc.coordinator != victim and desc.offsets else None


def test_a_group_skips_nothing_across_a_kill9_of_its_coordinator(cluster_factory):
    """Members committing after every poll, while records keep coming, the coordinator's broker
    is killed -9 and comes back: every record of the log reaches some member (at least once),
    and the group's committed offsets end at the log end."""
    cluster = failover_cluster(cluster_factory)
    stop = threading.Event()

    def keep_producing() -> None:
        with Producer(cluster.bootstrap, acks=-1, linger_ms=2) as p:
            i = 0
            while not stop.is_set():
                p.send("t", b"%d" % i, partition=i % 6)
                i += 1
                time.sleep(0.003)
            p.flush(timeout=60)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    members = [Member(cluster.bootstrap, f"m{i}", manual=True) for i in range(2)]
    for m in members:
        m.start()
    try:
        eventually(lambda: shares(members) == [3, 3], 30, "a 3/3 split")
        with Admin(cluster.bootstrap) as admin:
            eventually(lambda: admin.describe_groups(["g"])[0].offsets, 30, "commits")
            victim = admin.describe_groups(["g"])[0].coordinator
            cluster.nodes[victim].kill9()
            eventually(lambda: new_coordinator(admin, victim), 60, "a new coordinator")
            time.sleep(2)  # consuming under the new coordinator
            cluster.nodes[victim].spawn()
            cluster.nodes[victim].wait_started()
            time.sleep(2)
        stop.set()
        producer.join(90)
        with Consumer(cluster.bootstrap) as plain:
            ends = plain.end_offsets([TP("t", p) for p in range(6)])
        assert sum(ends.values()) > 0
        wanted = {(tp.partition, o) for tp, end in ends.items() for o in range(end)}
        eventually(
            lambda: wanted <= {r for m in members for r in m.records},
            60,
            "every record read by some member",
        )
    finally:
        stop.set()
        for m in members:
            m.close()
    with Admin(cluster.bootstrap) as admin:
        eventually(lambda: admin.list_group_offsets("g") == ends, 30, "commits at the log end")


def test_committed_offsets_survive_kill9_of_the_coordinators_broker(cluster_factory):
    cluster = failover_cluster(cluster_factory)
    produce(cluster.bootstrap, 60)
    with Consumer(cluster.bootstrap, group_id="g", enable_auto_commit=False, **MEMBER) as c:
        c.subscribe(["t"])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 60 and time.monotonic() < deadline:
            got += c.poll(timeout_ms=200)
        assert len(got) == 60
        c.commit({TP("t", p): 7 for p in range(6)})
    with Admin(cluster.bootstrap) as admin:
        [desc] = admin.describe_groups(["g"])
        assert {(o.partition, o.offset) for o in desc.offsets} == {(p, 7) for p in range(6)}
        victim = desc.coordinator
        cluster.nodes[victim].kill9()
        after = eventually(lambda: new_coordinator(admin, victim), 60, "a new coordinator")
        assert {(o.partition, o.offset) for o in after.offsets} == {(p, 7) for p in range(6)}
        # The new coordinator leads only some of t's partitions: the rest's lag still shows
        # (once the killed broker's partitions have new leaders).
        eventually(
            lambda: (
                {(o.partition, o.lag) for o in admin.describe_groups(["g"])[0].offsets}
                == {(p, 3) for p in range(6)}
            ),
            30,
            "every partition's lag",
        )
    # And a member starts from them.
    with Consumer(cluster.bootstrap, group_id="g", **MEMBER) as c:
        c.subscribe(["t"])
        again = []
        deadline = time.monotonic() + 30
        while len(again) < 18 and time.monotonic() < deadline:
            again += c.poll(timeout_ms=200)
        assert sorted((r.partition, r.offset) for r in again) == [
            (p, o) for p in range(6) for o in (7, 8, 9)
        ]


def one_clear_line(result) -> str:
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_group_commands_as_a_user_runs_them(node_factory, kraft):
    node = single_node(node_factory)
    bs = ("--bootstrap-server", node.address)
    produce(node.address, 30)
    # The console consumer in a group commits on exit: the next run goes on from there.
    first = kraft("consume", "t", "--group", "cli", "--from-beginning", "--max-messages", "30", *bs)
    assert first.returncode == 0, first.stderr
    assert sorted(int(v) for v in first.stdout.split()) == list(range(30))
    listed = json.loads(kraft("group", "list", "--format", "json", *bs).stdout)
    assert [(g["group_id"], g["state"]) for g in listed] == [("cli", "Empty")]
    desc = json.loads(kraft("group", "describe", "cli", "--format", "json", *bs).stdout)
    assert desc["state"] == "Empty" and desc["members"] == []
    assert {(o["partition"], o["committed_offset"], o["lag"]) for o in desc["offsets"]} == {
        (p, 5, 0) for p in range(6)
    }

    member = Member(node.address, "busy", group="cli")
    member.start()
    try:
        eventually(lambda: len(member.assigned) == 6, 30, "a member of cli")
        desc = json.loads(kraft("group", "describe", "cli", "--format", "json", *bs).stdout)
        assert desc["state"] == "Stable"
        [m] = desc["members"]
        assert m["client_id"] == "busy" and len(m["partitions"]) == 6 and m["member_id"]
        table = kraft("group", "describe", "cli", *bs).stdout
        assert "CURRENT-OFFSET" in table and "busy" in table
        refused = one_clear_line(
            kraft("group", "reset-offsets", "cli", "--topic", "t", "--to-earliest", *bs)
        )
        assert "stop its consumers" in refused
        assert "active members" in kraft("group", "delete", "cli", *bs).stdout
    finally:
        member.close()

    dry = json.loads(
        kraft(
            "group",
            "reset-offsets",
            "cli",
            "--topic",
            "t",
            "--to-earliest",
            "--dry-run",
            "--format",
            "json",
            *bs,
        ).stdout
    )
    assert {o["new_offset"] for o in dry["offsets"]} == {0}
    done = kraft("group", "reset-offsets", "cli", "--topic", "t:0", "--to-offset", "2", *bs)
    assert done.returncode == 0, done.stderr
    again = kraft("consume", "t", "--group", "cli", "--max-messages", "3", *bs)
    assert sorted(int(v) for v in again.stdout.split()) == [12, 18, 24]  # t-0 from offset 2
    assert kraft("group", "delete", "cli", *bs).returncode == 0
    assert json.loads(kraft("group", "list", "--format", "json", *bs).stdout) == []
    assert "does not exist" in one_clear_line(kraft("group", "describe", "cli", *bs))
