"""kraft dev's multi-process cluster minus its wait loops: the plan (pure), checks before a start
and on reusing a data dir. The files and processes themselves are chaos/launcher.py's, shared with
the chaos cluster and the tests; its names are re-exported here for kraft dev's callers."""

from __future__ import annotations

import dataclasses
import pathlib
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterable

from broker.server.config import parse_overrides
from chaos import launcher
from chaos.launcher import (  # noqa: F401
    STOP_GRACE_S,
    NodeFiles,
    Target,
    free_ports,
    is_kraft_process,
    write_cluster_json,
)
from kraft.log.log_manager import read_meta_properties

DEFAULT_BROKER_PORT = 9095  # kraft's gRPC; Kafka's clients get 9092 (entry/dev_single.py)
DEFAULT_CONTROLLER_PORT = 9192  # brokers take 9095, 9096, ... here
MAX_CONTROLLERS = 9
# kraft dev wires these per node; overriding one for every node would break the wiring.
MANAGED_KEYS = (
    "node.id",
    "process.roles",
    "listeners",
    "controller.listener.names",
    "controller.quorum.voters",
    "log.dirs",
    "log.dir",
)
# kraft dev's own defaults (each node's server.properties; --override wins): a killed broker's
# partitions move after about 1.2 s instead of Kafka's 9 s session, while a broker or controller
# stalled for up to a second (heartbeats every 200 ms) is still fenced by nobody. The README's
# kraft dev section says so; `kraft node` keeps Kafka's 9000 / 2000.
DEV_DEFAULTS = {"broker.session.timeout.ms": "1200", "broker.heartbeat.interval.ms": "200"}


class DevClusterError(ValueError):
    """Something kraft dev cannot do; the message says what to do instead (`kraft` prints it)."""


@dataclasses.dataclass(frozen=True)
class NodePlan(NodeFiles):
    id: int
    roles: tuple[str, ...]
    address: str  # a broker's broker listener, a controller's controller listener
    data_dir: pathlib.Path  # its log.dirs
    properties: dict[str, str]  # its server.properties, in file order
    kafka_address: str | None = None  # a broker's Kafka wire listener (Kafka's own clients)

    @property
    def node_dir(self) -> pathlib.Path:
        return self.data_dir.parent

    @property
    def label(self) -> str:
        return f"node {self.id} ({','.join(self.roles)})"


def plan_cluster(
    data_dir: pathlib.Path | str,
    controllers: int,
    brokers: int,
    host: str = "127.0.0.1",
    port: int = DEFAULT_BROKER_PORT,
    controller_port: int = DEFAULT_CONTROLLER_PORT,
    extra_overrides: Iterable[str] = (),
    *,
    pick_ports: Callable[[str, int], list[int]] = free_ports,
) -> list[NodePlan]:
    """Controllers are nodes 1..N at controller_port, +1, ...; brokers N+1..N+M at port, +1, ....
    Port 0 picks free ports up front (for `port`: all of them), since every node's
    controller.quorum.voters must name the controllers before any of them starts."""
    if not 1 <= controllers <= MAX_CONTROLLERS:
        raise DevClusterError(
            f"--controllers {controllers}: give 1 to {MAX_CONTROLLERS} "
            f"(3 tolerate one failure, 5 two)"
        )
    if brokers < 1:
        raise DevClusterError(f"--brokers {brokers}: give 1 or more")
    overrides = parse_overrides(list(extra_overrides))
    managed = [k for k in overrides if k in MANAGED_KEYS]
    if managed:
        raise DevClusterError(
            f"--override {managed[0]}: kraft dev sets it for each node; to choose "
            f"it, write server.properties files and run kraft node"
        )
    if port == 0:
        picked = pick_ports(host, controllers + brokers)
        controller_ports, broker_ports = picked[:controllers], picked[controllers:]
    else:
        broker_ports = list(range(port, port + brokers))
        controller_ports = (
            pick_ports(host, controllers)
            if controller_port == 0
            else list(range(controller_port, controller_port + controllers))
        )
    used = controller_ports + broker_ports
    if len(set(used)) != len(used):
        raise DevClusterError(
            f"broker ports {_span(broker_ports)} and controller ports "
            f"{_span(controller_ports)} overlap; move one with --port or "
            f"--controller-port (or --port 0 for free ones)"
        )
    if min(used) < 1 or max(used) > 65535:
        raise DevClusterError(
            f"ports {_span(used)} are not all between 1 and 65535; "
            f"pick lower --port / --controller-port"
        )
    data = pathlib.Path(data_dir)
    # Each node's metrics endpoint (metrics.listener): free ports apart from the nodes' own.
    metrics_ports = [p for p in free_ports(host, 2 * len(used)) if p not in used][: len(used)]
    voters = launcher.quorum_voters((i, f"{host}:{p}") for i, p in enumerate(controller_ports, 1))
    plans = []
    for node_id, node_port in enumerate(used, 1):
        role = "controller" if node_id <= controllers else "broker"
        log_dir = data / f"node-{node_id}" / "data"
        props = launcher.node_properties(
            node_id,
            role,
            f"{host}:{node_port}",
            voters,
            log_dir,
            {
                **DEV_DEFAULTS,
                "metrics.listener": f"http://{host}:{metrics_ports[node_id - 1]}",
                **overrides,
            },
        )
        plans.append(NodePlan(node_id, (role,), f"{host}:{node_port}", log_dir, props))
    return _with_kafka_listeners(plans, host, port, taken={*used, *metrics_ports})


# Kafka's clients expect brokers from 9092: with the default ports the brokers' Kafka wire
# listeners take 9092, 9093, ... (below kraft's own 9095, ...), else free ports.
DEFAULT_KAFKA_PORT = 9092


def _with_kafka_listeners(
    plans: list[NodePlan], host: str, port: int, *, taken: set[int]
) -> list[NodePlan]:
    """`taken`: the ports the plans already use (their listeners, metrics): free ones apart."""
    brokers = [p for p in plans if "broker" in p.roles]
    ports = (
        list(range(DEFAULT_KAFKA_PORT, DEFAULT_KAFKA_PORT + len(brokers)))
        if port == DEFAULT_BROKER_PORT and len(brokers) <= 3
        else [f for f in free_ports(host, 2 * len(brokers) + len(taken)) if f not in taken][
            : len(brokers)
        ]
    )
    kafka = dict(zip((p.id for p in brokers), ports))
    return [
        p
        if p.id not in kafka
        else dataclasses.replace(
            p,
            kafka_address=f"{host}:{kafka[p.id]}",
            properties={
                **p.properties,
                "listeners": f"{p.properties['listeners']},KAFKA://{host}:{kafka[p.id]}",
            },
        )
        for p in plans
    ]


def _span(ports: list[int]) -> str:
    return str(ports[0]) if len(ports) == 1 else f"{min(ports)}-{max(ports)}"


def _header(plan: NodePlan) -> str:
    return f"{plan.label} of a kraft dev cluster; kraft dev rewrites this file on every start"


def properties_text(plan: NodePlan) -> str:
    return launcher.properties_text(_header(plan), plan.properties)


def write_properties(plan: NodePlan) -> None:
    launcher.write_properties(plan.config_path, _header(plan), plan.properties)


def node_entry(plan: NodePlan, pid: int | None) -> dict:
    return launcher.node_entry(
        plan.id,
        plan.roles,
        plan.address,
        pid,
        plan.data_dir,
        plan.config_path,
        plan.log_path,
        metrics_address=plan.properties.get("metrics.listener", "").partition("://")[2] or None,
        kafka_address=plan.kafka_address,
    )


def read_cluster_json(data: pathlib.Path) -> dict | None:
    try:
        return launcher.read_cluster_json(data)
    except launcher.ClusterFileError as exc:
        raise DevClusterError(str(exc)) from None


def launch(
    config: pathlib.Path, log_path: pathlib.Path, *, detach: bool
) -> tuple[subprocess.Popen, int]:
    """Starts `kraft node --config F`, its output appended to its log; (process, log offset)."""
    return launcher.launch(config, log_path, new_session=detach)


def stop_targets(targets: list[Target], grace: float = STOP_GRACE_S) -> list[str]:
    """Brokers (and the supervisor) first, then the controllers; a line each."""
    return [
        f"killed {t.label}, pid {t.pid}: still running {grace:g} s after SIGTERM"
        if killed
        else f"stopped {t.label}, pid {t.pid}"
        for t, killed in launcher.stop_in_order(targets, grace)
    ]


def targets_of(doc: dict) -> list[Target]:
    targets = (
        [Target("the kraft dev supervisor", doc["supervisor_pid"])]
        if doc.get("supervisor_pid")
        else []
    )
    return targets + [
        Target(
            f"node {n['id']} ({','.join(n['roles'])})",
            n["pid"],
            controller="controller" in n["roles"],
        )
        for n in doc.get("nodes", [])
        if n.get("pid")
    ]


# --- reusing a data dir ---


def check_reuse(data: pathlib.Path, plans: list[NodePlan], previous: dict | None) -> None:
    """Re-running kraft dev on its data dir restarts that cluster, so it must be the same shape."""
    if previous is not None:
        running = [t for t in targets_of(previous) if t.alive()]
        if running:
            pids = ", ".join(str(t.pid) for t in running)
            raise DevClusterError(
                f"a kraft dev cluster is already running from {data} (pids {pids}); "
                f"stop it with: kraft dev --stop --data {data}"
            )
    if (data / "meta.properties").exists():
        raise DevClusterError(
            f"{data} holds a single-node kraft dev cluster; run it with: "
            f"kraft dev --data {data}, or pick another --data"
        )
    had = sorted((n["id"], tuple(n["roles"])) for n in (previous or {}).get("nodes", []))
    if had and had != sorted((p.id, p.roles) for p in plans):
        raise DevClusterError(
            f"{data} holds a cluster of {shape(previous)}; restart it with: "
            f"{start_command(previous, data)}, or pick another --data"
        )


def _counts(doc: dict) -> tuple[int, int]:
    roles = [tuple(n.get("roles", ())) for n in doc.get("nodes", [])]
    return roles.count(("controller",)), roles.count(("broker",))


def shape(doc: dict) -> str:
    c, b = _counts(doc)
    return f"{c} controller{'s' * (c != 1)} and {b} broker{'s' * (b != 1)}"


def start_command(doc: dict, data: pathlib.Path) -> str:
    """The kraft dev command that (re)starts the cluster `doc` (a cluster.json) describes."""
    c, b = _counts(doc)
    return f"kraft dev --controllers {c} --brokers {b} --data {data}"


def cluster_id_for(data: pathlib.Path, plans: list[NodePlan]) -> str:
    metas = [read_meta_properties(p.data_dir) or {} for p in plans]
    ids = {m["cluster.id"] for m in metas if m.get("cluster.id")}
    if len(ids) > 1:
        raise DevClusterError(
            f"the nodes under {data} belong to different clusters "
            f"({', '.join(sorted(ids))}); pick another --data"
        )
    return ids.pop() if ids else uuid.uuid4().hex


def ports_free(host: str, ports: list[int]) -> bool:
    """Every port can be bound on `host` now (with SO_REUSEADDR, as grpc binds)."""
    for port in ports:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def recorded_ports(previous: dict | None) -> list[int]:
    """The port of each node a previous run of this data dir recorded in cluster.json, by node
    id (controllers first, as plan_cluster numbers them); [] when there is none."""
    nodes = sorted((previous or {}).get("nodes", []), key=lambda n: n.get("id", 0))
    try:
        return [int(str(n["address"]).rpartition(":")[2]) for n in nodes]
    except (KeyError, ValueError):
        return []


def reusing_ports(
    previous: dict | None, pick: Callable[[str, int], list[int]] = free_ports
) -> Callable[[str, int], list[int]]:
    """A pick_ports for plan_cluster that gives back the ports this data dir's cluster had, when
    they are all free, so `--port 0` on a re-run keeps the addresses clients saved; otherwise
    (first run, ports taken, another shape) fresh free ones from `pick`."""
    recorded = recorded_ports(previous)
    controllers = [
        p
        for n, p in zip(
            sorted((previous or {}).get("nodes", []), key=lambda n: n.get("id", 0)), recorded
        )
        if "controller" in n.get("roles", ())
    ]

    def choose(host: str, count: int) -> list[int]:
        for candidates in (recorded, controllers):
            if candidates and len(candidates) == count and ports_free(host, candidates):
                return list(candidates)
        return pick(host, count)

    return choose


def check_ports_free(plans: list[NodePlan]) -> None:
    for p in plans:
        host, _, port = p.address.rpartition(":")
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            # SO_REUSEADDR as grpc sets it: a just-stopped cluster's TIME_WAIT ports are fine.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, int(port)))
            except OSError as exc:
                raise DevClusterError(
                    f"{p.label} cannot listen on {p.address} ({exc.strerror}); stop what uses it "
                    f"(another kraft dev? kraft dev --stop --data DIR) or choose other ports with "
                    f"--port and --controller-port (0 picks free ones)"
                ) from None
