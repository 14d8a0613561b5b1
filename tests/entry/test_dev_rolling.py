"""`kraft dev --rolling-restart` against a fake cluster (entry.dev_rolling's Probes): the order
(brokers, then the controllers with the quorum leader last), the wait for a whole ISR before the
next node, the JSON summary, and the errors naming the node and the partitions still short."""

from __future__ import annotations

import io
import json

import pytest

from chaos.launcher import write_cluster_json
from clients.admin import PartitionInfo, TopicDescription
from clients.quorum_info import QuorumInfo, ReplicaInfo
from entry.dev_cluster import DevClusterError
from entry.dev_rolling import Probes, rolling_restart, short_partitions


class FakeCluster:
    """Nodes 1-3 controllers, 4-6 brokers; a restarted broker's partitions stay short for
    `short_polls` polls, and forever for those in `never_whole`."""

    def __init__(self, data, short_polls=2, never_whole=()):
        self.data, self.now, self.events = data, 0.0, []
        self.running = {n: 100 + n for n in range(1, 7)}
        self.short_polls, self.never_whole, self.pending = short_polls, set(never_whole), 0
        self.last = None
        write_cluster_json(
            data,
            {
                "cluster_id": "c",
                "supervisor_pid": None,
                "nodes": [
                    {
                        "id": n,
                        "roles": ["controller" if n <= 3 else "broker"],
                        "address": f"127.0.0.1:{9000 + n}",
                        "pid": 100 + n,
                        "log": f"/logs/{n}",
                    }
                    for n in range(1, 7)
                ],
            },
        )

    def probes(self) -> Probes:
        return Probes(
            registrations=lambda brokers: {b: set(brokers) for b in brokers},
            short=self.short,
            quorum=self.quorum,
            restart=self.restart,
            alive=lambda pid: pid in self.running.values(),
            terminate=self.terminate,
            clock=lambda: self.now,
            sleep=self.sleep,
        )

    def sleep(self, s):
        self.now += s

    def terminate(self, pid):
        node = next(n for n, p in self.running.items() if p == pid)
        self.events.append(("stop", node))
        del self.running[node]

    def restart(self, data, node_id, timeout):
        self.events.append(("start", node_id))
        self.running[node_id] = 200 + node_id
        doc = json.loads((data / "cluster.json").read_text())
        for n in doc["nodes"]:
            if n["id"] == node_id:
                n["pid"] = 200 + node_id
        write_cluster_json(data, doc)
        self.last, self.pending = node_id, self.short_polls

    def short(self, brokers):
        if self.last in self.never_whole:
            return ["orders-0", "orders-2"]
        if self.pending:
            self.pending -= 1
            self.events.append(("short", self.last))
            return [f"orders-{self.last}"]
        return []

    def quorum(self, controllers):
        voters = tuple(ReplicaInfo(i, 50, 0) for i in (1, 2, 3))
        return QuorumInfo(2, "Leader", 2, 7, 50, 50, voters, ())


def test_brokers_one_at_a_time_each_after_a_whole_isr_then_controllers_leader_last(tmp_path):
    fake, out, err = FakeCluster(tmp_path), io.StringIO(), io.StringIO()
    code = rolling_restart(
        tmp_path,
        30,
        include_controllers=True,
        output_format="json",
        out=out,
        err=err,
        probes=fake.probes(),
    )
    assert code == 0
    brokers = [e for e in fake.events if e[1] >= 4]
    # each broker is stopped only once the previous one's partitions are whole again
    assert brokers == [
        ("stop", 4),
        ("start", 4),
        ("short", 4),
        ("short", 4),
        ("stop", 5),
        ("start", 5),
        ("short", 5),
        ("short", 5),
        ("stop", 6),
        ("start", 6),
        ("short", 6),
        ("short", 6),
    ]
    stops = [n for what, n in fake.events if what == "stop"]
    assert stops == [4, 5, 6, 1, 3, 2]  # controller 2 leads: last
    summary = json.loads(out.getvalue())
    assert [n["id"] for n in summary["nodes"]] == [4, 5, 6, 1, 3, 2]
    assert summary["nodes"][0]["isr_s"] == pytest.approx(0.4)
    assert set(summary["nodes"][3]) == {"id", "roles", "stop_s", "rejoin_s", "caught_up_s"}
    assert err.getvalue().count("kraft dev: [") == 6
    assert "[1/6] node 4 (broker): stopped in 0.0 s" in err.getvalue()


def test_a_broker_whose_isr_stays_short_is_named_with_its_partitions(tmp_path):
    fake = FakeCluster(tmp_path, never_whole={5})
    with pytest.raises(DevClusterError) as exc:
        rolling_restart(tmp_path, 5, out=io.StringIO(), err=io.StringIO(), probes=fake.probes())
    message = str(exc.value)
    assert "node 5 (broker)" in message and "5 s" in message
    assert "orders-0, orders-2" in message
    assert ("stop", 6) not in fake.events  # the next broker is left alone


def test_a_node_already_down_stops_the_restart_before_it_begins(tmp_path):
    fake = FakeCluster(tmp_path)
    del fake.running[2]
    with pytest.raises(DevClusterError, match="node 2 is not running.*--restart 2"):
        rolling_restart(tmp_path, 5, out=io.StringIO(), err=io.StringIO(), probes=fake.probes())
    assert fake.events == []


def test_short_partitions_lists_those_missing_a_replica_or_a_leader():
    topics = [
        TopicDescription(
            "t",
            [
                PartitionInfo(0, 4, 1, [4, 5, 6], [4, 5, 6]),
                PartitionInfo(1, 5, 1, [4, 5, 6], [5, 6]),
                PartitionInfo(2, -1, 1, [4], [4]),
            ],
        )
    ]
    assert short_partitions(topics) == ["t-1", "t-2"]
