"""`kraft dev --rolling-restart`: restart a kraft dev cluster's nodes one at a time, each through its
controlled shutdown (SIGTERM: its leaderships move first), and start the next only once the
cluster is whole again: for a broker, every broker registered and unfenced and every partition's
ISR holding all its replicas; for a controller (--include-controllers), a quorum leader and the
restarted voter caught up to its high watermark. Brokers first, then the controllers, the active
one last. Each node's wait is bounded by --timeout; the error names the node and what is short."""

from __future__ import annotations

import dataclasses
import io
import pathlib
import signal
import time
from collections.abc import Callable
from typing import TextIO

from chaos.launcher import Target, broker_registrations, unregistered
from clients.cli.output import print_json
from entry.dev import restart_node
from entry.dev_cluster import DevClusterError, is_kraft_process, read_cluster_json, start_command

POLL_S = 0.2
DEFAULT_TIMEOUT_S = 120.0  # per node: `kraft dev --timeout`
ASK_TIMEOUT_S = 2.0  # one Metadata / DescribeQuorum request while polling


@dataclasses.dataclass
class Step:
    """One node's restart: seconds from SIGTERM to its exit, from its start to it serving (a
    broker registered and unfenced, a controller back in a quorum with a leader), and from then
    to the cluster whole (a broker: every ISR full; a controller: caught up)."""

    node_id: int
    roles: tuple[str, ...]
    stop_s: float = 0.0
    rejoin_s: float = 0.0
    whole_s: float = 0.0

    def json(self) -> dict:
        key = "isr_s" if "broker" in self.roles else "caught_up_s"
        return {
            "id": self.node_id,
            "roles": list(self.roles),
            "stop_s": round(self.stop_s, 3),
            "rejoin_s": round(self.rejoin_s, 3),
            key: round(self.whole_s, 3),
        }


def short_partitions(topics) -> list[str]:
    """'topic-p' for each partition (of describe_topics' answer) whose ISR lacks a replica."""
    return [
        f"{t.name}-{p.partition}"
        for t in topics
        for p in t.partitions
        if not set(p.replicas) <= set(p.isr) or p.leader < 0
    ]


def describe_short(brokers: list[str]) -> list[str] | None:
    """The partitions whose ISR is not whole, through kraft's Admin client (as `kraft topic
    describe` reads them); None when no broker answered."""
    from clients.admin import Admin
    from clients.errors import KraftError

    try:
        with Admin(",".join(brokers), request_timeout_ms=int(ASK_TIMEOUT_S * 1000)) as admin:
            return short_partitions(admin.describe_topics())
    except KraftError:
        return None


def quorum_state(controllers: list[str]):
    """The quorum leader's DescribeQuorum (`kraft quorum describe`'s data), None if none answers."""
    import trio

    from clients.errors import KraftError
    from clients.quorum_info import ask_quorum

    try:
        return trio.run(ask_quorum, controllers, ASK_TIMEOUT_S)
    except KraftError:
        return None


def caught_up(info, node_id: int) -> bool:
    """A leader is known and `node_id`'s log reached its high watermark."""
    if info is None or info.leader_id is None or info.role != "Leader":
        return False
    voter = next((v for v in info.voters if v.replica_id == node_id), None)
    return voter is not None and voter.log_end_offset >= info.high_watermark


@dataclasses.dataclass
class Probes:
    """What the restart asks of the cluster; the tests swap in fakes."""

    registrations: Callable[[dict[int, str]], dict[int, set[int] | None]] = broker_registrations
    short: Callable[[list[str]], list[str] | None] = describe_short
    quorum: Callable[[list[str]], object] = quorum_state
    restart: Callable[[pathlib.Path, int, float], None] = lambda data, node_id, timeout: (
        restart_node(data, node_id, timeout, io.StringIO())
    )
    alive: Callable[[int], bool] = is_kraft_process
    terminate: Callable[[int], None] = lambda pid: Target("", pid).send(signal.SIGTERM)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


class _Cluster:
    def __init__(self, data: pathlib.Path, alive: Callable[[int], bool]) -> None:
        doc = read_cluster_json(data)
        if doc is None:
            raise DevClusterError(
                f"{data} has no cluster.json; start a cluster with: "
                f"kraft dev --controllers 3 --brokers 3 --data {data}"
            )
        if (data / "client.properties").exists():
            raise DevClusterError(
                f"{data} holds a --secure cluster; --rolling-restart handles plaintext ones only "
                f"(restart its nodes with kill PID, then kraft dev --restart ID --data {data})"
            )
        self.data, self.doc = data, doc
        self.nodes = sorted(doc.get("nodes", []), key=lambda n: n["id"])
        self.brokers = {n["id"]: n["address"] for n in self.nodes if "broker" in n["roles"]}
        self.controllers = [n["address"] for n in self.nodes if "controller" in n["roles"]]
        if any(set(n["roles"]) == {"broker", "controller"} for n in self.nodes) or not self.brokers:
            raise DevClusterError(
                f"{data} holds a single combined node; --rolling-restart is for a cluster "
                f"(kraft dev --controllers N --brokers M)"
            )
        down = [n["id"] for n in self.nodes if not alive(n.get("pid"))]
        if down:
            raise DevClusterError(
                f"node {down[0]} is not running, so restarting another could take the cluster "
                f"below its quorum or ISR; start it first with: kraft dev --restart {down[0]} "
                f"--data {data} (or the whole cluster: {start_command(doc, data)})"
            )

    def pid(self, node_id: int) -> int:
        doc = read_cluster_json(self.data) or {}
        return next(n["pid"] for n in doc.get("nodes", []) if n["id"] == node_id)


def _label(node: dict) -> str:
    return f"node {node['id']} ({','.join(node['roles'])})"


def rolling_restart(
    data: pathlib.Path,
    timeout: float,
    *,
    include_controllers: bool = False,
    output_format: str = "text",
    out: TextIO,
    err: TextIO,
    probes: Probes | None = None,
) -> int:
    if timeout <= 0:
        raise DevClusterError(f"--timeout {timeout:g}: give the seconds each node may take (> 0)")
    probes = probes or Probes()
    cluster = _Cluster(pathlib.Path(data), probes.alive)
    order = [n for n in cluster.nodes if "broker" in n["roles"]]
    if include_controllers:
        order += _controllers_leader_last(cluster, probes)
    begun = probes.clock()
    # The ISR must be whole before the first restart too: else it could leave a partition
    # with fewer than min.insync.replicas.
    _wait(
        probes,
        probes.clock() + timeout,
        lambda: _short_or_none(cluster, probes),
        lambda short: (
            f"no node restarted: the cluster is still not whole after {timeout:g} s ({short})"
        ),
    )
    steps = []
    for i, node in enumerate(order, 1):
        step = _restart_one(cluster, node, timeout, probes)
        steps.append(step)
        what = "ISR whole" if "broker" in node["roles"] else "caught up"
        print(
            f"kraft dev: [{i}/{len(order)}] {_label(node)}: stopped in {step.stop_s:.1f} s, "
            f"rejoined in {step.rejoin_s:.1f} s, {what} in {step.whole_s:.1f} s",
            file=err,
            flush=True,
        )
    total = probes.clock() - begun
    if output_format == "json":
        print_json({"nodes": [s.json() for s in steps], "total_s": round(total, 3)}, file=out)
    else:
        print(f"kraft dev: rolling restart of {len(steps)} nodes done in {total:.1f} s", file=out)
    return 0


def _controllers_leader_last(cluster: _Cluster, probes: Probes) -> list[dict]:
    info = probes.quorum(cluster.controllers)
    leader = getattr(info, "leader_id", None)
    nodes = [n for n in cluster.nodes if "controller" in n["roles"]]
    return sorted(nodes, key=lambda n: n["id"] == leader)


def _short_or_none(cluster: _Cluster, probes: Probes) -> str | None:
    """None when every broker lists every broker and every ISR is whole, else what is short."""
    missing = unregistered(probes.registrations(cluster.brokers))
    if missing:
        return f"brokers {', '.join(map(str, sorted(missing)))} are not registered and unfenced"
    short = probes.short(list(cluster.brokers.values()))
    if short is None:
        return "no broker answers Metadata"
    return f"partitions {', '.join(short)} are short of a whole ISR" if short else None


def _wait(probes: Probes, deadline: float, check, message) -> None:
    """Poll `check` (None: done, else what is still short) until done; past `deadline`, raise
    message(what is short)."""
    while True:
        short = check()
        if short is None:
            return
        if probes.clock() > deadline:
            raise DevClusterError(message(short))
        probes.sleep(POLL_S)


def _restart_one(cluster: _Cluster, node: dict, timeout: float, probes: Probes) -> Step:
    step, label, within = Step(node["id"], tuple(node["roles"])), _label(node), f"{timeout:g} s"
    t0 = probes.clock()
    deadline = t0 + timeout
    pid = cluster.pid(node["id"])
    probes.terminate(pid)  # SIGTERM: the node's controlled shutdown
    _wait(
        probes,
        deadline,
        lambda: "running" if probes.alive(pid) else None,
        lambda _: (
            f"{label}, pid {pid}, still runs {within} after SIGTERM (its "
            f"controlled shutdown hangs); read its log: {node['log']}"
        ),
    )
    t1 = probes.clock()
    step.stop_s = t1 - t0
    try:
        probes.restart(cluster.data, node["id"], max(1.0, deadline - t1))
    except DevClusterError as exc:
        raise DevClusterError(f"{label} did not start again: {exc}") from None
    if "broker" in node["roles"]:
        _wait(
            probes,
            deadline,
            lambda: _unregistered(cluster, probes),
            lambda short: (
                f"{label} has not rejoined {within} after SIGTERM: {short}; read its "
                f"log: {node['log']}"
            ),
        )
        t2 = probes.clock()
        _wait(
            probes,
            deadline,
            lambda: _short_isr(cluster, probes),
            lambda short: f"the ISR is not whole {within} after {label} got SIGTERM: {short}",
        )
    else:
        _wait(
            probes,
            deadline,
            lambda: None if _has_leader(probes.quorum(cluster.controllers)) else "no leader",
            lambda _: (
                f"the controllers' quorum has no leader {within} after {label} got "
                f"SIGTERM; read its log: {node['log']}"
            ),
        )
        t2 = probes.clock()
        _wait(
            probes,
            deadline,
            lambda: None if caught_up(probes.quorum(cluster.controllers), node["id"]) else "lag",
            lambda _: (
                f"{label} has not caught up to the quorum leader's high watermark "
                f"{within} after SIGTERM; read its log: {node['log']}"
            ),
        )
    step.rejoin_s = t2 - t1
    step.whole_s = probes.clock() - t2
    return step


def _unregistered(cluster: _Cluster, probes: Probes) -> str | None:
    missing = unregistered(probes.registrations(cluster.brokers))
    if not missing:
        return None
    return f"brokers {', '.join(map(str, sorted(missing)))} do not list every broker as unfenced"


def _short_isr(cluster: _Cluster, probes: Probes) -> str | None:
    short = probes.short(list(cluster.brokers.values()))
    if short is None:
        return "no broker answers Metadata"
    return f"partitions still short: {', '.join(short)}" if short else None


def _has_leader(info) -> bool:
    return info is not None and info.leader_id is not None
