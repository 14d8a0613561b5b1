"""Fixtures for end-to-end tests: a real `kraft dev` node process on a free loopback port, with
kill -9, SIGTERM and restart on the same data dir."""
from __future__ import annotations

import os
import pathlib
import select
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Sibling helper modules (waiting.py) import by name under --import-mode=importlib.
if str(pathlib.Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(pathlib.Path(__file__).parent))


class NodeProcess:
    def __init__(self, data_dir: pathlib.Path, overrides: list[str] | None = None,
                 preexec_fn=None) -> None:
        self.data_dir = data_dir
        self.overrides = overrides or []
        self.preexec_fn = preexec_fn       # run in the child before exec (e.g. lower a limit)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "NodeProcess":
        cmd = [sys.executable, "-m", "entry.main", "dev", "--data", str(self.data_dir),
               "--port", str(self.port)]
        for o in self.overrides:
            cmd += ["--override", o]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                     preexec_fn=self.preexec_fn)
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if b"listening on" in line:
                    self.port = int(line.split(b"listening on ", 1)[1].split(b",", 1)[0].rsplit(b":", 1)[1])
                    return self
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"node did not start: {line!r}; log:\n{self.log_path.read_text()[-3000:]}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 20.0, signum: int = signal.SIGTERM) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)


@pytest.fixture
def node(tmp_path):
    n = NodeProcess(tmp_path / "node1").start()
    yield n
    if n.proc.poll() is None:
        n.proc.kill()
        n.proc.wait(10)


@pytest.fixture
def node_factory(tmp_path):
    started: list[NodeProcess] = []

    def make(name: str = "node1", overrides: list[str] | None = None) -> NodeProcess:
        n = NodeProcess(tmp_path / name, overrides)
        started.append(n)
        return n

    yield make
    for n in started:
        if n.proc is not None and n.proc.poll() is None:
            n.proc.kill()
            n.proc.wait(10)


def run_kraft(*args: str, input: str | None = None, env: dict | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the `kraft` command line as a user would (same interpreter, real process)."""
    return subprocess.run([sys.executable, "-m", "entry.main", *args], cwd=ROOT, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def kraft():
    return run_kraft


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClusterNode:
    """One `kraft node` process of a multi-node cluster (controller-only or broker-only), with its
    own server.properties and data dir; start waits for its `listening on` line."""

    def __init__(self, node_id: int, roles: str, root: pathlib.Path, voters: str, address: str,
                 overrides: dict[str, str]) -> None:
        self.node_id, self.roles, self.address = node_id, roles, address
        self.data_dir = root / f"node-{node_id}"
        self.config = root / f"node-{node_id}.properties"
        listener = "CONTROLLER" if roles == "controller" else "PLAINTEXT"
        props = {"process.roles": roles, "node.id": str(node_id),
                 "listeners": f"{listener}://{address}", "controller.listener.names": "CONTROLLER",
                 "controller.quorum.voters": voters, "log.dirs": str(self.data_dir), **overrides}
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.log_path = root / f"node-{node_id}.log"
        self.proc: subprocess.Popen | None = None

    def format(self, cluster_id: str) -> None:
        done = run_kraft("format", "--config", str(self.config), "--cluster-id", cluster_id,
                         "--ignore-formatted")
        assert done.returncode == 0, done.stderr

    def spawn(self) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "entry.main", "node", "--config", str(self.config)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def wait_started(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready and b"listening on " + self.address.encode() in self.proc.stdout.readline():
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"node {self.node_id} did not start; log:\n"
                             f"{self.log_path.read_text()[-3000:]}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Cluster:
    def __init__(self, root: pathlib.Path, controllers: int, brokers: int,
                 overrides: dict[str, str] | None = None) -> None:
        self.root = root
        ids = range(1, controllers + brokers + 1)
        addresses = {i: f"127.0.0.1:{free_port()}" for i in ids}
        voters = ",".join(f"{i}@{addresses[i]}" for i in range(1, controllers + 1))
        self.nodes = {i: ClusterNode(i, "controller" if i <= controllers else "broker", root,
                                     voters, addresses[i], overrides or {}) for i in ids}
        self.controllers = [self.nodes[i] for i in range(1, controllers + 1)]
        self.brokers = [self.nodes[i] for i in ids if i > controllers]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def start(self) -> "Cluster":
        for n in self.nodes.values():
            n.format("e2e-cluster")
        for n in self.nodes.values():
            n.spawn()
        for n in self.nodes.values():
            n.wait_started()
        return self

    def stop(self) -> None:
        for n in self.nodes.values():
            n.stop()


@pytest.fixture
def cluster_factory(tmp_path):
    made: list[Cluster] = []

    def make(controllers: int = 3, brokers: int = 3, start: bool = True, **overrides: str) -> Cluster:
        """Overrides as keyword arguments: controller_quorum_fetch_timeout_ms="1000"."""
        c = Cluster(tmp_path, controllers, brokers, {k.replace("_", "."): v for k, v in overrides.items()})
        made.append(c)
        return c.start() if start else c

    yield make
    for c in made:
        for n in c.nodes.values():
            if n.alive():
                n.proc.kill()
                n.proc.wait(10)


@pytest.fixture
def dev_data(tmp_path):
    """A data dir for `kraft dev --detach`; every kraft process its cluster.json names (node or
    supervisor) is killed afterwards, whatever the test left running."""
    import json

    from entry.dev_cluster import is_kraft_process

    d = tmp_path / "dev"
    yield d
    if (d / "cluster.json").exists():
        doc = json.loads((d / "cluster.json").read_text())
        for pid in [doc.get("supervisor_pid")] + [n.get("pid") for n in doc.get("nodes", [])]:
            if pid and is_kraft_process(pid):
                os.kill(pid, signal.SIGKILL)
