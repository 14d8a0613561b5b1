"""Real kraft processes for the end-to-end tests: one `kraft dev` node on a free loopback port,
or a multi-node cluster of `kraft node` processes, with kill -9, SIGTERM and restart. A node's
server.properties, ports and formatting come from chaos.launcher, as kraft dev's and chaos's do."""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import select
import signal
import subprocess
import sys
import time

from chaos import launcher

ROOT = pathlib.Path(__file__).resolve().parents[2]


class NodeProcess:
    def __init__(
        self, data_dir: pathlib.Path, overrides: list[str] | None = None, preexec_fn=None
    ) -> None:
        self.data_dir = data_dir
        self.overrides = overrides or []
        self.preexec_fn = preexec_fn  # run in the child before exec (e.g. lower a limit)
        self.port = 0
        self.controller_address = ""  # a combined node's controller listener, once started
        self.kafka_address = ""  # its Kafka wire listener, once started
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> NodeProcess:
        cmd = [
            sys.executable,
            "-m",
            "entry.main",
            "dev",
            "--data",
            str(self.data_dir),
            "--port",
            str(self.port),
        ]
        for o in self.overrides:
            cmd += ["--override", o]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=self.preexec_fn,
        )
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if b"listening on" in line:
                    self.port = int(
                        line.split(b"listening on ", 1)[1].split(b",", 1)[0].rsplit(b":", 1)[1]
                    )
                    if b"Kafka clients on " in line:
                        self.kafka_address = (
                            line.split(b"Kafka clients on ", 1)[1].split(b",", 1)[0].decode()
                        )
                    if b"controller on " in line:
                        self.controller_address = (
                            line.split(b"controller on ", 1)[1].split(b",", 1)[0].decode()
                        )
                    return self
            if self.proc.poll() is not None:
                break
        raise RuntimeError(
            f"node did not start: {line!r}; log:\n{self.log_path.read_text()[-3000:]}"
        )

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 20.0, signum: int = signal.SIGTERM) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)


def run_kraft(
    *args: str, input: str | None = None, env: dict | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """Run the `kraft` command line as a user would (same interpreter, real process)."""
    return subprocess.run(
        [sys.executable, "-m", "entry.main", *args],
        cwd=ROOT,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def free_port() -> int:
    return launcher.free_ports("127.0.0.1", 1)[0]


class ClusterNode:
    """One `kraft node` process of a multi-node cluster (controller-only or broker-only), with its
    own server.properties and data dir; start waits for its `listening on` line."""

    def __init__(
        self,
        node_id: int,
        roles: str,
        root: pathlib.Path,
        voters: str,
        address: str,
        overrides: dict[str, str],
    ) -> None:
        self.node_id, self.roles, self.address = node_id, roles, address
        self.data_dir = root / f"node-{node_id}"
        self.config = root / f"node-{node_id}.properties"
        props = launcher.node_properties(node_id, roles, address, voters, self.data_dir, overrides)
        # A broker's Kafka wire listener, PLAINTEXT only so far: none on a cluster whose
        # listeners are secured (listener.security.protocol.map set), as kraft dev --secure.
        secured = "listener.security.protocol.map" in props
        self.kafka_address = "" if roles == "controller" or secured else f"127.0.0.1:{free_port()}"
        if self.kafka_address:
            props["listeners"] += f",KAFKA://{self.kafka_address}"
        launcher.write_properties(
            self.config, f"node {node_id} ({roles}) of an end-to-end test cluster", props
        )
        self.log_path = root / f"node-{node_id}.log"
        self.proc: subprocess.Popen | None = None

    def format(self, cluster_id: str) -> None:
        done = launcher.format_node(self.config, cluster_id, ignore_formatted=True)
        assert done.returncode == 0, done.stderr

    def spawn(self) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "entry.main", "node", "--config", str(self.config)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def wait_started(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready and b"listening on " + self.address.encode() in self.proc.stdout.readline():
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError(
            f"node {self.node_id} did not start; log:\n{self.log_path.read_text()[-3000:]}"
        )

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
    def __init__(
        self,
        root: pathlib.Path,
        controllers: int,
        brokers: int,
        overrides: dict[str, str] | None = None,
        node_overrides: dict[int, dict[str, str]] | None = None,
    ) -> None:
        self.root = root
        ids = range(1, controllers + brokers + 1)
        addresses = {
            i: f"127.0.0.1:{port}"
            for i, port in zip(ids, launcher.free_ports("127.0.0.1", len(ids)))
        }
        voters = launcher.quorum_voters((i, addresses[i]) for i in range(1, controllers + 1))
        self.nodes = {
            i: ClusterNode(
                i,
                "controller" if i <= controllers else "broker",
                root,
                voters,
                addresses[i],
                {**(overrides or {}), **(node_overrides or {}).get(i, {})},
            )
            for i in ids
        }
        self.controllers = [self.nodes[i] for i in range(1, controllers + 1)]
        self.brokers = [self.nodes[i] for i in ids if i > controllers]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def start(self) -> Cluster:
        # Each format is a Python process importing the whole package: one after another they
        # took 40 s of a loaded 2-core machine, side by side they overlap their waits.
        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda n: n.format("e2e-cluster"), self.nodes.values()))
        for n in self.nodes.values():
            n.spawn()
        for n in self.nodes.values():
            n.wait_started()
        return self

    def stop(self) -> None:
        for n in self.nodes.values():
            n.stop()
