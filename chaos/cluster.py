"""The chaos run's cluster: 3 controllers and 3 brokers as `kraft node` processes, each inside its
own network namespace (chaos.netns), with kill -9 / SIGSTOP / SIGCONT / restart by node id.
Files and processes come from chaos.launcher, which kraft dev and the tests share."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import trio

from chaos import launcher, netns
from chaos.launcher import NodeFiles, Target
from chaos.node_logs import ROOT, log_tail
from chaos.secure import INTERNAL_PORT, SecureFiles

CONTROLLER_PORT = 9093
BROKER_PORT = 9092
# Fast failure detection so a fault's effects (elections, fencing, ISR shrink) and the recovery
# after it both fit in a fault window of a few seconds.
FAST_SETTINGS = {
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.election.timeout.ms": "300",
    "controller.quorum.request.timeout.ms": "1000",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "auto.create.topics.enable": "false",
    # The workload's consumer group: a few offsets partitions (Kafka's 50 would mostly idle),
    # every group write on 3 replicas and acknowledged by 2 at least.
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "min.insync.replicas": "2",
}
STOP_GRACE_S = 15.0


class ClusterError(RuntimeError):
    """The cluster did not start or answer; the message names the node and its log."""


@dataclasses.dataclass(frozen=True)
class ChaosNode(NodeFiles):
    id: int
    role: str  # "controller" or "broker"
    host: str
    port: int
    node_dir: pathlib.Path  # OUT/nodes/node-<id>: server.properties, node.log, data/

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> pathlib.Path:
        return self.node_dir / "data"


def plan(nodes_dir: pathlib.Path, controllers: int = 3, brokers: int = 3) -> list[ChaosNode]:
    """Controllers are nodes 1..C, brokers C+1..C+B, each at 10.77.0.<id> (its namespace's
    address), so every node can use the same port."""
    return [
        ChaosNode(
            i,
            "controller" if i <= controllers else "broker",
            netns.address(i),
            CONTROLLER_PORT if i <= controllers else BROKER_PORT,
            pathlib.Path(nodes_dir).resolve() / f"node-{i}",
        )
        for i in range(1, controllers + brokers + 1)
    ]


def properties_text(
    node: ChaosNode,
    nodes: list[ChaosNode],
    settings: dict[str, str],
    secure: SecureFiles | None = None,
) -> str:
    voters = launcher.quorum_voters((n.id, n.address) for n in nodes if n.role == "controller")
    props = launcher.node_properties(
        node.id, node.role, node.address, voters, node.data_dir, settings
    )
    if secure is not None:
        props.update(secure.node_properties(node.id, node.role, node.host, node.port))
    return launcher.properties_text(f"node {node.id} ({node.role}) of a chaos run", props)


class NodeSet:
    """What every chaos cluster (LocalCluster, chaos.docker_cluster.DockerCluster) answers the
    same way, through the nodes' addresses: roles, the bootstrap list, who leads what now. A
    secure cluster is asked with the admin's certificate, on the brokers' INTERNAL listeners."""

    def __init__(self, nodes: list[ChaosNode], secure: SecureFiles | None = None) -> None:
        self.nodes = {n.id: n for n in nodes}
        self.secure = secure

    @property
    def client_security(self) -> dict:
        """The workload's security options (kafka-python's names) for `bootstrap`."""
        return self.secure.admin_scram() if self.secure else {}

    def _check_security(self) -> dict:
        return self.secure.admin_mtls() if self.secure else {}

    def check_address(self, broker: int) -> str:
        """Where the runner's own checks ask a broker: they need no SCRAM user."""
        n = self.nodes[broker]
        return f"{n.host}:{INTERNAL_PORT}" if self.secure else n.address

    @property
    def controllers(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.role == "controller"]

    @property
    def brokers(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.role == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(self.nodes[i].address for i in self.brokers)

    def lagging_brokers(self) -> set[int]:
        """Brokers whose Metadata does not list every broker (or that do not answer)."""
        views = launcher.broker_registrations(
            {i: self.check_address(i) for i in self.brokers}, 2.0, **self._check_security()
        )
        return launcher.unregistered(views)

    def active_controller(self, timeout: float = 1.0) -> int | None:
        """The quorum leader, as `kraft quorum describe` finds it (the leader's own answer wins)."""
        from clients.cli.common import CliError
        from clients.cli.quorum import describe_quorum
        from clients.security import client_security

        addresses = [self.nodes[i].address for i in self.controllers]
        security = client_security(**self._check_security())
        try:  # a gRPC deadline of `timeout` bounds each controller's answer
            info = trio.run(
                functools.partial(describe_quorum, addresses, timeout, security=security)
            )
        except CliError:
            return None
        return info.leader_id if info.leader_id is not None and info.leader_id >= 0 else None

    def leaders(self, topic: str, timeout: float = 3.0) -> dict[int, int]:
        """{partition: leader broker} from Metadata; {} when no broker answers in time."""
        from clients.admin import AsyncAdmin
        from clients.errors import KraftError

        async def ask() -> dict[int, int]:
            with trio.move_on_after(timeout):
                async with AsyncAdmin(
                    ",".join(self.check_address(i) for i in self.brokers),
                    request_timeout_ms=int(timeout * 1000),
                    **self._check_security(),
                ) as admin:
                    (desc,) = await admin.describe_topics([topic])
                    return {p.partition: p.leader for p in desc.partitions if p.leader >= 0}
            return {}

        try:
            return trio.run(ask)
        except KraftError:
            return {}


class LocalCluster(NodeSet):
    """Node processes by id. A node's pid is the kraft process itself: `ip netns exec` enters
    the namespace and execs, so signals reach kraft, not a wrapper."""

    def __init__(
        self,
        nodes: list[ChaosNode],
        settings: dict[str, str] | None = None,
        python: str = sys.executable,
        secure: SecureFiles | None = None,
    ) -> None:
        super().__init__(nodes, secure)
        self.settings = dict(FAST_SETTINGS if settings is None else settings)
        self.python = python
        self.procs: dict[int, subprocess.Popen] = {}
        self.log_offsets: dict[int, int] = {}
        self.paused: set[int] = set()
        # Hook for the nemeses (chaos/nemeses/): words put before the node's python, inside its
        # namespace; they must exec, so the pid stays the node's (e.g. libfaketime's `env`).
        self.command_prefix: Callable[[int], list[str]] = lambda node_id: []

    def format(self, cluster_id: str) -> None:
        for n in self.nodes.values():
            n.node_dir.mkdir(parents=True, exist_ok=True)
            n.config_path.write_text(
                properties_text(n, list(self.nodes.values()), self.settings, self.secure)
            )
            done = launcher.format_node(n.config_path, cluster_id, python=self.python)
            if done.returncode != 0:
                raise ClusterError(f"kraft format failed for node {n.id}: {done.stderr.strip()}")

    def start(self, node_id: int, why: str = "start") -> int:
        n = self.nodes[node_id]
        self.procs[node_id], self.log_offsets[node_id] = launcher.launch(
            n.config_path,
            n.log_path,
            python=self.python,
            prefix=("ip", "netns", "exec", netns.ns_name(node_id), *self.command_prefix(node_id)),
            banner=f"=== chaos: {why} node {node_id} at {time.strftime('%H:%M:%S')} ===",
            cwd=ROOT,
            new_session=True,
        )  # Ctrl-C on the runner must not hit nodes
        self.paused.discard(node_id)
        return self.procs[node_id].pid

    def alive(self, node_id: int) -> bool:
        proc = self.procs.get(node_id)
        return proc is not None and proc.poll() is None

    def signal(self, node_id: int, signum: int) -> None:
        proc = self.procs.get(node_id)
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def kill(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGKILL)
        if node_id in self.procs:
            self.procs[node_id].wait(10)  # reap it: its ports and files are free again
        self.paused.discard(node_id)

    def pause(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGSTOP)
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGCONT)
        self.paused.discard(node_id)

    def wait_ready(self, timeout: float) -> None:
        """Every node logged `listening on`, and every broker's Metadata lists every broker."""
        deadline = time.monotonic() + timeout
        waiting = set(self.nodes)
        while waiting:
            for i in list(waiting):
                if not self.alive(i):
                    n = self.nodes[i]
                    raise ClusterError(
                        f"node {i} exited before it was ready; read its log: "
                        f"{n.log_path}{log_tail(n.log_path, self.log_offsets[i])}"
                    )
                if launcher.is_listening(self.nodes[i].log_path, self.log_offsets[i]):
                    waiting.discard(i)
            self._check_deadline(deadline, timeout, waiting, "is not listening")
            time.sleep(0.2)
        while True:
            lagging = self.lagging_brokers()
            if not lagging:
                return
            self._check_deadline(deadline, timeout, lagging, "does not list every broker")
            time.sleep(0.5)

    def _check_deadline(self, deadline: float, timeout: float, late: set[int], what: str) -> None:
        if time.monotonic() > deadline:
            n = self.nodes[min(late)]
            raise ClusterError(
                f"node {n.id} {what} after {timeout:g} s; read its log: "
                f"{n.log_path}{log_tail(n.log_path, self.log_offsets.get(n.id, 0))}"
            )

    def stop_all(self, grace: float = STOP_GRACE_S) -> list[str]:
        """SIGCONT (a stopped process cannot act on SIGTERM), then SIGTERM brokers while the
        controllers still answer, then controllers; SIGKILL whatever outlives the grace."""
        for i in self.procs:
            self.resume(i)
        targets = [
            Target(f"node {i}", proc.pid, proc, self.nodes[i].role == "controller")
            for i, proc in self.procs.items()
        ]
        return [
            f"killed {t.label}: still running {grace:g} s after SIGTERM"
            if killed
            else f"stopped {t.label} (exit code {t.proc.returncode})"
            for t, killed in launcher.stop_in_order(targets, grace)
        ]
