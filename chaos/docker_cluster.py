"""`chaos/run.sh --docker`: docker-compose.yml's six nodes as the chaos cluster, with the interface
of chaos.cluster.LocalCluster (kill -9 by `docker kill`, pause by `docker pause`) and of
chaos.netns.Network (partitions as iptables DROP rules inside each container's network namespace)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping

from chaos import launcher
from chaos.cluster import (
    CONTROLLER_PORT,
    FAST_SETTINGS,
    STOP_GRACE_S,
    ChaosNode,
    ClusterError,
    NodeSet,
)
from chaos.node_logs import ROOT

# Each run is a compose project of its own (kraft-chaos-<hex>), from docker-compose.yml plus an
# override the run writes to OUT/docker-compose.chaos.json: the FAST_SETTINGS of the local mode,
# no healthchecks (nothing waits on them here; a paused node would only turn unhealthy) and a fixed
# address per node on a subnet no other network uses. Nodes listen on and advertise those
# addresses, which the host reaches through the compose network's bridge, so the workload runs on
# the host with no /etc/hosts entries; a restarted container keeps its address.
#
# Partitions: `nsenter -t <container pid> -n iptables -A INPUT -s <peer> -j DROP`, run from the
# host in the container's network namespace (no NET_ADMIN, no iptables in the image). As in
# chaos.netns, packets are silently lost (TCP retransmits, deadlines expire); the host's address
# is never dropped, so the workload and the nemesis always reach every node that runs.
SERVICES = {
    1: "controller1",
    2: "controller2",
    3: "controller3",
    4: "broker1",
    5: "broker2",
    6: "broker3",
}
PROJECT_PREFIX = "kraft-chaos-"
DEFAULT_IMAGE = "kraft:local"
COMPOSE_FILE = ROOT / "docker-compose.yml"
CONTAINER_DATA = "/var/lib/kraft/data"  # KRAFT_CFG_LOG_DIRS in the Dockerfile
CONTAINER_CONFIG = "/etc/kraft/server.properties"
# One docker run per machine: leftovers of an earlier, crashed one are removed by project prefix.
# Separate from chaos.run's lock, so a network-namespace run and a docker run can share a machine.
LOCK_PATH = "/run/kraft-chaos-docker.lock"
SUBNET_PREFIX = "10.77"  # 10.77.0.0/24 is chaos.netns's bridge
PROJECT_LABEL = "com.docker.compose.project"
# Compose v1 cannot disable a healthcheck in an override (`disable` clashes with the base file's
# interval): a trivial test, hourly, costs nothing instead of 0.5 s of CPU per node every 10 s.
NO_HEALTHCHECK = {"test": ["CMD", "true"], "interval": "3600s", "start_period": "0s"}


def _run(cmd: list[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)


def compose_command() -> list[str] | None:
    """`docker compose` (v2, or docker/install-compose-plugin.sh's shim), else `docker-compose`."""
    if shutil.which("docker") and _run(["docker", "compose", "version"]).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def engine_problem() -> str | None:
    """Why no Docker engine can be used here (None when one answers `docker info`)."""
    if shutil.which("docker") is None:
        return "no docker command on this machine (apt-get install -y docker.io)"
    try:
        info = _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer in 30 s: is the Docker engine running?"
    if info.returncode != 0 or not info.stdout.strip():
        return (
            f"no Docker engine answers `docker info`: {(info.stderr or info.stdout).strip()[:300]}"
        )
    return None


def unavailable_reason(image: str | None) -> str | None:
    """Why --docker cannot run here (None when it can); the image is not looked for when None."""
    if os.geteuid() != 0:
        return "--docker needs root: partitions enter the containers' network namespaces (nsenter)"
    for tool in ("docker", "nsenter", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install -y docker.io util-linux iptables)"
    problem = engine_problem()
    if problem:
        return problem
    if compose_command() is None:
        return "neither `docker compose` nor docker-compose is installed (apt-get install docker-compose)"
    if image is not None and _run(["docker", "image", "inspect", image]).returncode != 0:
        return f"no image {image}: build it with docker/build-images.sh {image}"
    return None


def _labels(kind: str) -> set[str]:
    """Compose project names of this machine's containers, networks or volumes."""
    listed = _run(
        [
            "docker",
            kind,
            "ls",
            *(["-a"] if kind == "container" else []),
            "--filter",
            f"label={PROJECT_LABEL}",
            "--format",
            f'{{{{.Label "{PROJECT_LABEL}"}}}}',
        ]
    )
    return {line.strip() for line in listed.stdout.splitlines() if line.strip()}


def remove_leftovers(compose: list[str], env: Mapping[str, str] | None = None) -> list[str]:
    """`down -v` every kraft-chaos-* project: what a run killed before its own teardown left."""
    removed = []
    for project in sorted(
        p
        for kind in ("container", "network", "volume")
        for p in _labels(kind)
        if p.startswith(PROJECT_PREFIX)
    ):
        if project in removed:
            continue
        _run(
            [
                *compose,
                "-p",
                project,
                "-f",
                str(COMPOSE_FILE),
                "down",
                "-v",
                "--remove-orphans",
                "--timeout",
                "5",
            ],
            timeout=180,
            env=env,
        )
        removed.append(project)
    return [f"compose project {p} (left by an earlier run)" for p in removed]


def pick_subnet() -> str:
    """The first 10.77.<n> (n >= 1) that no docker network and no host route uses."""
    used = set()
    names = _run(["docker", "network", "ls", "-q"]).stdout.split()
    if names:
        done = _run(
            [
                "docker",
                "network",
                "inspect",
                "--format",
                "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
                *names,
            ]
        )
        used.update(done.stdout.split())
    used.update(line.split()[0] for line in _run(["ip", "-4", "route"]).stdout.splitlines() if line)
    for n in range(1, 255):
        if not any(u.startswith(f"{SUBNET_PREFIX}.{n}.") for u in used):
            return f"{SUBNET_PREFIX}.{n}"
    raise ClusterError(f"no free {SUBNET_PREFIX}.<n>.0/24 subnet for the compose network")


def env_name(key: str) -> str:
    """server.properties key -> the image's KRAFT_CFG_* variable (docker/entrypoint.sh)."""
    if "_" in key:
        raise ValueError(f"{key}: the entrypoint cannot express a key with '_' as KRAFT_CFG_*")
    return "KRAFT_CFG_" + key.upper().replace(".", "_")


class DockerCluster(NodeSet):
    """The compose project's six nodes by node id; `format` creates the containers, `start` starts
    one. `stop_all` stops them and copies each node's data dir, config and log into its node_dir,
    the layout of a local run (OUT/nodes/node-<id>/{data,server.properties,node.log})."""

    def __init__(
        self,
        nodes_dir: pathlib.Path,
        override_path: pathlib.Path,
        image: str,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.compose = compose_command() or ["docker-compose"]
        self.project = f"{PROJECT_PREFIX}{uuid.uuid4().hex[:8]}"
        self.subnet = pick_subnet()
        self.ports = dict(zip((4, 5, 6), launcher.free_ports("127.0.0.1", 3)))
        super().__init__(
            [
                ChaosNode(
                    i,
                    "controller" if i <= 3 else "broker",
                    f"{self.subnet}.{10 + i}",
                    CONTROLLER_PORT if i <= 3 else self.ports[i],
                    pathlib.Path(nodes_dir).resolve() / f"node-{i}",
                )
                for i in SERVICES
            ]
        )
        self.image, self.override_path = image, override_path
        self.settings = dict(FAST_SETTINGS if settings is None else settings)
        self.env = {
            **os.environ,
            "KRAFT_IMAGE": image,
            **{f"KRAFT_BROKER{i - 3}_PORT": str(p) for i, p in self.ports.items()},
        }
        self.base = [
            *self.compose,
            "-p",
            self.project,
            "-f",
            str(COMPOSE_FILE),
            "-f",
            str(override_path),
        ]
        self.containers: dict[int, str] = {}

    def _compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        done = _run([*self.base, *args], timeout=timeout, env=self.env)
        if done.returncode != 0:
            raise ClusterError(
                f"`docker compose {' '.join(args)}` failed: {done.stderr.strip()[-1500:]}"
            )
        return done

    def _docker(
        self, *args: str, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess:
        done = _run(["docker", *args], timeout=timeout)
        if check and done.returncode != 0:
            raise ClusterError(f"`docker {' '.join(args)}` failed: {done.stderr.strip()[-500:]}")
        return done

    def override(self) -> dict:
        voters = launcher.quorum_voters((i, self.nodes[i].address) for i in self.controllers)
        services = {}
        for i, name in SERVICES.items():
            n = self.nodes[i]
            listener = "CONTROLLER" if n.role == "controller" else "PLAINTEXT"
            env = {env_name(k): v for k, v in self.settings.items()}
            env.update(
                KRAFT_CFG_LISTENERS=f"{listener}://{n.address}",
                KRAFT_CFG_CONTROLLER_QUORUM_VOTERS=voters,
            )
            services[name] = {
                "environment": env,
                "healthcheck": NO_HEALTHCHECK,
                "networks": {"default": {"ipv4_address": n.host}},
            }
        return {
            "services": services,
            "networks": {"default": {"ipam": {"config": [{"subnet": f"{self.subnet}.0/24"}]}}},
        }

    def format(self, cluster_id: str) -> None:
        """Writes the override and creates the containers, network and volumes (none started);
        each container's entrypoint formats its volume on its first start."""
        self.override_path.write_text(json.dumps(self.override(), indent=1) + "\n")
        self.env["KRAFT_CLUSTER_ID"] = cluster_id
        self._compose("up", "--no-start", *SERVICES.values())
        for i, name in SERVICES.items():
            cid = self._compose(
                "ps", "-a", "-q", name
            ).stdout.strip()  # v2 lists created ones with -a
            if not cid:
                raise ClusterError(
                    f"compose created no container for {name} (project {self.project})"
                )
            self.containers[i] = cid

    def _state(self, node_id: int) -> tuple[bool, bool, int]:
        """(running, paused, pid) of the node's container."""
        done = self._docker(
            "inspect",
            "--format",
            "{{.State.Running}} {{.State.Paused}} {{.State.Pid}}",
            self.containers[node_id],
            check=False,
        )
        if done.returncode != 0:
            return False, False, 0
        running, paused, pid = done.stdout.split()
        return running == "true", paused == "true", int(pid)

    def start(self, node_id: int, why: str = "start") -> int:
        self._docker("start", self.containers[node_id], timeout=120)
        return self._state(node_id)[2]

    def alive(self, node_id: int) -> bool:
        return node_id in self.containers and self._state(node_id)[0]

    def pid(self, node_id: int) -> int:
        """The container's init process (kraft itself: the entrypoint execs it); 0 when stopped."""
        running, _, pid = self._state(node_id)
        return pid if running else 0

    def kill(self, node_id: int) -> None:
        self._docker("kill", "--signal", "KILL", self.containers[node_id], check=False)
        self._docker("wait", self.containers[node_id], timeout=30, check=False)

    def pause(self, node_id: int) -> None:
        self._docker("pause", self.containers[node_id])

    def resume(self, node_id: int) -> None:
        if node_id in self.containers and self._state(node_id)[1]:
            self._docker("unpause", self.containers[node_id])

    def log_tail(self, node_id: int, lines: int = 5) -> str:
        done = self._docker("logs", "--tail", str(lines), self.containers[node_id], check=False)
        return "".join(f"\n  | {line}" for line in (done.stdout + done.stderr).splitlines())

    def wait_ready(self, timeout: float) -> None:
        """Every container runs, the quorum has a leader, every broker's Metadata lists every
        broker."""
        deadline = time.monotonic() + timeout
        what = "no answer yet"
        while time.monotonic() < deadline:
            for i in self.nodes:
                if not self.alive(i):
                    raise ClusterError(
                        f"node {i} ({SERVICES[i]}) exited before it was ready; its "
                        f"last lines (docker logs {self.containers[i][:12]}):"
                        f"{self.log_tail(i)}"
                    )
            leader, lagging = self.active_controller(2.0), self.lagging_brokers()
            if leader is not None and not lagging:
                return
            what = (
                "no quorum leader"
                if leader is None
                else f"brokers {sorted(lagging)} do not list every broker"
            )
            time.sleep(1.0)
        worst = min(lagging) if lagging else self.controllers[0]
        raise ClusterError(
            f"the compose cluster is not ready after {timeout:g} s ({what}); node "
            f"{worst}'s last lines:{self.log_tail(worst)}"
        )

    def stop_all(self, grace: float = STOP_GRACE_S) -> list[str]:
        """Unpause, `docker stop` the brokers while the controllers still answer, then the
        controllers; then copy every node's files out of its volume."""
        lines = []
        for i in self.containers:
            try:
                self.resume(i)
            except ClusterError as exc:
                lines.append(str(exc))
        for group in (self.brokers, self.controllers):
            live = [i for i in group if i in self.containers and self.alive(i)]
            if live:
                self._docker(
                    "stop",
                    "--time",
                    f"{grace:.0f}",
                    *(self.containers[i] for i in live),
                    timeout=grace + 60,
                    check=False,
                )
            for i in live:
                code = self._docker(
                    "inspect", "--format", "{{.State.ExitCode}}", self.containers[i], check=False
                ).stdout.strip()
                lines.append(f"stopped node {i} ({SERVICES[i]}, exit code {code})")
        return lines + self.collect()

    def collect(self) -> list[str]:
        """docker cp each node's data dir and config, and its `docker logs -t`, into node_dir."""
        lines = []
        for i, cid in sorted(self.containers.items()):
            n = self.nodes[i]
            n.node_dir.mkdir(parents=True, exist_ok=True)
            for src, dest in ((CONTAINER_DATA, n.data_dir), (CONTAINER_CONFIG, n.config_path)):
                done = self._docker("cp", f"{cid}:{src}", str(dest), timeout=300, check=False)
                if done.returncode != 0:
                    lines.append(f"node {i}: docker cp {src} failed: {done.stderr.strip()[-300:]}")
            with open(n.log_path, "wb") as log:
                subprocess.run(
                    ["docker", "logs", "--timestamps", cid],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=120,
                )
        copied = sum(1 for n in self.nodes.values() if n.data_dir.is_dir())
        return lines + [f"copied {copied} data dirs, configs and logs out of the containers"]

    def down(self) -> list[str]:
        args = ["down", "-v", "--remove-orphans", "--timeout", "10"]
        done = _run([*self.base, *args], timeout=300, env=self.env)
        if done.returncode != 0:  # e.g. an unwritten override: the base file names it all too
            done = _run([*self.base[:-2], *args], timeout=300, env=self.env)
        if done.returncode != 0:
            return [
                f"`docker compose -p {self.project} down -v` failed: {done.stderr.strip()[-500:]}"
            ]
        return [f"compose project {self.project} (containers, network, volumes)"]


class DockerNetwork:
    """chaos.netns.Network's interface over the compose network: node n drops every packet from
    each node in grudge[n] (iptables INPUT in n's container namespace). `teardown` takes the whole
    compose project down (`down -v`), after the cluster's stop_all copied its files out."""

    def __init__(self, cluster: DockerCluster) -> None:
        self.cluster = cluster
        self.grudge: dict[int, frozenset[int]] = {}

    def setup(self) -> list[str]:
        return remove_leftovers(self.cluster.compose, self.cluster.env)

    def _iptables(self, node_id: int, rules: list[list[str]]) -> None:
        pid = self.cluster.pid(node_id)
        if not pid:  # not running: it has no namespace, and a restart starts without rules
            return
        for args in rules:
            done = _run(["nsenter", "--target", str(pid), "--net", "iptables", *args], timeout=30)
            if done.returncode != 0 and self.cluster.pid(node_id):
                raise ClusterError(
                    f"iptables {' '.join(args)} in node {node_id}'s namespace "
                    f"failed: {done.stderr.strip()}"
                )

    def apply(self, grudge: Mapping[int, Iterable[int]]) -> None:
        """Node n drops every packet from each node in grudge[n]; adds to what is already cut."""
        for node_id, peers in sorted(grudge.items()):
            new = set(peers) - self.grudge.get(node_id, frozenset()) - {node_id}
            self._iptables(
                node_id,
                [
                    ["-A", "INPUT", "-s", self.cluster.nodes[peer].host, "-j", "DROP"]
                    for peer in sorted(new)
                ],
            )
            self.grudge[node_id] = self.grudge.get(node_id, frozenset()) | frozenset(new)

    def heal(self) -> None:
        # Docker keeps its own rules (the embedded DNS) in the nat table: flushing filter's
        # INPUT removes only ours.
        for node_id in self.cluster.nodes:
            self._iptables(node_id, [["-F", "INPUT"]])
        self.grudge = {}

    def teardown(self) -> list[str]:
        return self.cluster.down()
