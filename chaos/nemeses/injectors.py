"""The net, clock, disk-full, corrupt and power nemeses wired to a LocalCluster run: what each must
set up before the nodes start (libfaketime's control files, the data dirs' tmpfs or lazyfs mounts), the
Executor's injector for each (chaos.nemesis.Injector), the heal-everything at the end of the
faulty phase and the teardown that leaves nothing mounted or shaped."""

from __future__ import annotations

import os
import pathlib
import random
from collections.abc import Sequence

from chaos import netns
from chaos.nemeses import clock, corrupt, disk, net, power
from chaos.nemesis import Fault
from chaos.node_logs import ROOT

# What a nemesis raises when it cannot set up or undo its fault: the run ends with exit 2.
NemesisSetupError = (net.NetFaultError, clock.ClockError, disk.DiskError, power.PowerError)
# The compose cluster (chaos/docker_cluster.py) runs only these: the others need the node's
# command line (faketime), its data dir on a mount of ours, or its files while it is stopped.
DOCKER_NEMESES = ("kill", "pause", "partition")


class NetInjector:
    def __init__(self, faults: net.NetFaults) -> None:
        self.faults = faults

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str:
        done = []
        for node_id in hit:  # each node its own mix, as Jepsen draws per target
            behaviour = net.draw(rng)
            how = self.faults.start(node_id, behaviour, seed=rng.randrange(2**31))
            done.append(f"{node_id} {behaviour.describe()} ({how})")
        return "; ".join(done)

    def end(self, fault: Fault, hit: list[int]) -> None:
        for node_id in hit:
            self.faults.heal(node_id)


class ClockInjector:
    def __init__(self, clocks: clock.ClockFaults) -> None:
        self.clocks = clocks

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str:
        done = []
        for node_id in hit:
            change = clock.draw(rng, fault.kind or None)
            self.clocks.start(node_id, change)
            done.append(f"{node_id} {change.describe()}")
        return "; ".join(done)

    def end(self, fault: Fault, hit: list[int]) -> None:
        for node_id in hit:
            self.clocks.reset(node_id)


class DiskInjector:
    def __init__(self, disks: disk.DiskFaults, cluster) -> None:
        self.disks, self.cluster = disks, cluster

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str:
        return "; ".join(f"{n} filled ({self.disks.fill(n) >> 20} MiB)" for n in hit)

    def end(self, fault: Fault, hit: list[int]) -> None:
        for node_id in hit:
            if self.disks.empty(node_id) or not self.cluster.alive(node_id):
                # Its log dir went offline (or it exited): only a restart brings it back.
                self.cluster.kill(node_id)
                self.cluster.start(node_id, "restart after disk-full of")


class CorruptInjector:
    def __init__(self, cluster) -> None:
        self.cluster = cluster

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str:
        done = []
        for node_id in hit:
            self.cluster.kill(node_id)
            damage = corrupt.damage_node(self.cluster.nodes[node_id].data_dir, rng)
            done.append(
                f"{node_id} killed, "
                + (damage.describe() if damage else "nothing lies past a recovery point")
            )
        return "; ".join(done)

    def end(self, fault: Fault, hit: list[int]) -> None:
        for node_id in hit:
            self.cluster.start(node_id, "restart after corrupt of")


class PowerInjector:
    def __init__(self, faults: power.PowerFaults, cluster) -> None:
        self.faults, self.cluster = faults, cluster

    def begin(self, fault: Fault, hit: list[int], rng: random.Random) -> str:
        done = []
        for node_id in hit:
            self.cluster.kill(node_id)  # first: it must not write while its disk goes
            done.append(f"{node_id} killed, {self.faults.cut(node_id)}")
        return "; ".join(done)

    def end(self, fault: Fault, hit: list[int]) -> None:
        for node_id in hit:
            self.cluster.start(node_id, "restart after power cut of")


class Extras:
    """The setup, injectors, heal and teardown of the nemeses in `chosen` for one run of a
    chaos.cluster.LocalCluster in chaos.netns namespaces."""

    def __init__(self, out: pathlib.Path, cluster, chosen: Sequence[str]) -> None:
        self.cluster, self.chosen = cluster, set(chosen)
        self.clocks = (
            clock.ClockFaults(out / "clock", cluster.nodes) if "clock" in self.chosen else None
        )
        self.power = (
            power.PowerFaults({i: n.data_dir for i, n in cluster.nodes.items()}, cluster.python)
            if "power" in self.chosen
            else None
        )
        # With power too, the tmpfs is the lazyfs' backing dir: the disk that fills is the one
        # the synced bytes go to.
        disk_dir = power.backing_of if self.power else (lambda d: d)
        self.disks = (
            disk.DiskFaults(
                {i: disk_dir(n.data_dir) for i, n in cluster.nodes.items()},
                log_of=lambda i: cluster.nodes[i].log_path,
            )
            if "disk-full" in self.chosen
            else None
        )
        peers = [netns.address(i) for i in cluster.nodes] + [netns.HOST_ADDRESS]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.net = (
            net.NetFaults(
                lambda i: ["ip", "netns", "exec", netns.ns_name(i)],
                peers,
                env=env,
                python=cluster.python,
            )
            if "net" in self.chosen
            else None
        )
        self.injectors = {}
        if self.net:
            self.injectors["net"] = NetInjector(self.net)
        if self.clocks:
            self.injectors["clock"] = ClockInjector(self.clocks)
        if self.disks:
            self.injectors["disk-full"] = DiskInjector(self.disks, cluster)
        if "corrupt" in self.chosen:
            self.injectors["corrupt"] = CorruptInjector(cluster)
        if self.power:
            self.injectors["power"] = PowerInjector(self.power, cluster)

    def problem(self) -> str | None:
        """Why these nemeses cannot run here (None when they can)."""
        if self.clocks and clock.available():
            return clock.available()
        if self.power and power.unavailable():
            return power.unavailable()
        return None

    def prefix(self, node_id: int) -> list[str]:
        """LocalCluster.command_prefix: libfaketime when the clock nemesis is on."""
        return self.clocks.prefix(node_id) if self.clocks else []

    def setup(self) -> None:
        """Before `format`: the data dirs' mounts (the tmpfs first: it may be lazyfs' backing)."""
        if self.disks:
            self.disks.mount_all()
        if self.power:
            self.power.mount_all()

    def heal_all(self) -> list[int]:
        """Undo whatever is still on; returns the nodes that need a restart (a log dir that
        went offline on a full disk)."""
        if self.net:
            self.net.heal_all()
        if self.clocks:
            self.clocks.reset_all()
        return self.disks.empty_all() if self.disks else []

    def teardown(self) -> list[str]:
        """After the nodes stopped: nothing shaped, nothing mounted (files copied back)."""
        self.heal_all()
        lines = self.power.unmount_all() if self.power else []
        lines += self.disks.unmount_all() if self.disks else []
        return lines + (self.power.restore() if self.power else [])
