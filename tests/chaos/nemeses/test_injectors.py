"""The injectors the executor calls for the new nemeses, against a fake cluster: corrupt kills
the broker before it damages its files and restarts it at the end; disk-full restarts a node
only when its log dir went offline (or it died); power kills the node before its disk loses
what it held and restarts it at the end; clock sets each node's offset and the end sets
it back."""

from __future__ import annotations

import dataclasses
import pathlib
import random

import pytest

from chaos.nemeses.clock import ClockFaults, available
from chaos.nemeses.injectors import ClockInjector, CorruptInjector, DiskInjector, PowerInjector
from chaos.nemesis import Fault
from clients.record.codec import encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig


@dataclasses.dataclass
class Node:
    data_dir: pathlib.Path


class FakeCluster:
    def __init__(self, nodes):
        self.nodes, self.calls, self.dead = nodes, [], set()

    def kill(self, n):
        self.calls.append(("kill", n))

    def start(self, n, why=""):
        self.calls.append(("start", n))

    def alive(self, n):
        return n not in self.dead


def test_corrupt_kills_then_damages_then_restarts(tmp_path):
    data = tmp_path / "node-4" / "data"
    log = Log.open(data / "chaos-0", LogConfig(), now_ms=0)
    for i in range(20):
        log.append_as_leader(encode_batch([(None, b"%d" % i, [], 1000)]), leader_epoch=1, now_ms=0)
    log.flush()
    before = (data / "chaos-0" / "00000000000000000000.log").read_bytes()
    cluster = FakeCluster({4: Node(data)})
    injector = CorruptInjector(cluster)
    fault = Fault("corrupt", "", "broker", "one", 1, 2)
    detail = injector.begin(fault, [4], random.Random(2))
    assert cluster.calls == [("kill", 4)] and "recovery point 0" in detail
    files = {p.name: p.read_bytes() for p in (data / "chaos-0").iterdir()}
    assert files["00000000000000000000.log"] != before or "index" in detail
    injector.end(fault, [4])
    assert cluster.calls == [("kill", 4), ("start", 4)]


class FakeDisks:
    def __init__(self, went_offline):
        self.went_offline, self.calls = went_offline, []

    def fill(self, n):
        self.calls.append(("fill", n))
        return 8 << 20

    def empty(self, n):
        self.calls.append(("empty", n))
        return n in self.went_offline


def test_disk_full_restarts_only_the_nodes_that_need_it():
    cluster, disks = FakeCluster({}), FakeDisks(went_offline={5})
    cluster.dead = {6}
    injector = DiskInjector(disks, cluster)
    fault = Fault("disk-full", "", "any", "all", 1, 2)
    assert "4 filled (8 MiB)" in injector.begin(fault, [4, 5, 6], random.Random(0))
    injector.end(fault, [4, 5, 6])
    assert disks.calls[3:] == [("empty", 4), ("empty", 5), ("empty", 6)]
    assert cluster.calls == [("kill", 5), ("start", 5), ("kill", 6), ("start", 6)]


class FakePower:
    def __init__(self, cluster):
        self.cluster = cluster

    def cut(self, n):
        self.cluster.calls.append(("cut", n))
        return "unsynced writes dropped"


def test_power_kills_then_cuts_then_restarts():
    cluster = FakeCluster({})
    injector = PowerInjector(FakePower(cluster), cluster)
    fault = Fault("power", "", "any", "one", 1, 2)
    detail = injector.begin(fault, [2], random.Random(0))
    assert detail == "2 killed, unsynced writes dropped"
    assert cluster.calls == [("kill", 2), ("cut", 2)]
    injector.end(fault, [2])
    assert cluster.calls[2:] == [("start", 2)]


def test_clock_sets_and_resets_each_offset(tmp_path):
    if available():
        pytest.skip(available())
    clocks = ClockFaults(tmp_path, [1, 2, 3])
    injector = ClockInjector(clocks)
    fault = Fault("clock", "bump", "any", "all", 1, 2)
    detail = injector.begin(fault, [1, 3], random.Random(4))
    assert detail.count("bump") == 2
    assert clocks.offset(1) != 0 and clocks.offset(3) != 0 and clocks.offset(2) == 0
    injector.end(fault, [1, 3])
    assert [clocks.offset(i) for i in (1, 2, 3)] == [0, 0, 0]
