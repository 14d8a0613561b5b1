"""What the docker compose tests share: running docker, skipping where no engine runs, building the
image, and a compose project of its own that is torn down whatever happens."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
import uuid

import pytest
from system_tools import require_docker_image_tools

from chaos.docker_cluster import compose_command, engine_problem
from chaos.launcher import free_ports

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kwargs)


def skip(capsys, reason: str) -> None:
    # pytest shows skip reasons only with -rs; this one should be read in CI's log as it is.
    with capsys.disabled():
        print(f"\nSKIPPED tests/docker: {reason}", flush=True)
    pytest.skip(reason)


class ComposeCluster:
    def __init__(self, compose: list[str], image: str, file: str = "docker-compose.yml") -> None:
        ports = free_ports("127.0.0.1", 3)
        self.project = f"kraft-test-{uuid.uuid4().hex[:8]}"
        self.env = {
            **os.environ,
            "KRAFT_IMAGE": image,
            **{f"KRAFT_BROKER{i}_PORT": str(p) for i, p in enumerate(ports, 1)},
        }
        self.base = [*compose, "-p", self.project, "-f", str(ROOT / file)]
        self.bootstrap = ",".join(f"broker{i}:{p}" for i, p in enumerate(ports, 1))

    def compose(
        self, *args: str, timeout: float = 120, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        done = run([*self.base, *args], timeout=timeout, env=self.env, input=input)
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
                f"\n--- cluster logs ---\n{self.logs()}"
            )
        return done

    def kraft(self, *args: str, timeout: float = 120, input: str | None = None) -> str:
        """A kraft command in a one-off `client` container on the cluster's network."""
        return self.compose(
            "run", "--rm", "-T", "client", "kraft", *args, timeout=timeout, input=input
        ).stdout

    def health(self, service: str) -> str:
        cid = self.compose("ps", "-q", service).stdout.strip()
        if not cid:
            return "no container"
        state = run(
            [
                "docker",
                "inspect",
                "--format",
                "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}",
                cid,
            ],
            timeout=30,
        )
        return state.stdout.strip()

    def logs(self) -> str:
        try:
            return run(
                [*self.base, "logs", "--no-color", "--tail", "30"], timeout=60, env=self.env
            ).stdout[-8000:]
        except subprocess.TimeoutExpired:
            return "(docker compose logs timed out)"

    def down(self) -> None:
        run(
            [*self.base, "down", "-v", "--remove-orphans", "--timeout", "20"],
            timeout=180,
            env=self.env,
        )


def require_compose(capsys) -> list[str]:
    """The compose command; the test is skipped (reason printed) where Docker or compose is missing."""
    problem = engine_problem()
    if problem:
        skip(capsys, problem)
    compose = compose_command()
    if compose is None:
        skip(capsys, "neither `docker compose` nor docker-compose is installed")
    return compose


def build_image(image: str, compose: list[str], capsys=None) -> list[str]:
    """docker/build-images.sh (reuses the base image when present); the compose command after it,
    since the build may have installed `docker compose`. Skipped where the base image must be
    built and debootstrap is missing."""
    require_docker_image_tools(capsys)
    build = run(
        ["docker/build-images.sh", image],
        timeout=1200,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert build.returncode == 0, (
        f"docker/build-images.sh failed:\n{build.stdout[-2000:]}\n{build.stderr[-3000:]}"
    )
    return compose_command() or compose


def wait_healthy(cluster: ComposeCluster, service: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while (state := cluster.health(service)) != "running healthy":
        assert time.monotonic() < deadline, (
            f"{service} is {state!r} after {timeout:g} s:\n{cluster.logs()}"
        )
        time.sleep(2)


def assert_removed(cluster: ComposeCluster) -> None:
    leftover = run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={cluster.project}"],
        timeout=30,
    ).stdout.strip()
    assert not leftover, f"containers of {cluster.project} left after down: {leftover}"


def produce_and_consume(cluster: ComposeCluster, topic: str, records: int) -> None:
    """Through `client`: create `topic` (3 partitions, RF 3), produce `records` keyed records with
    acks=all, consume them all back, each partition's offsets from 0 without a gap."""
    cluster.kraft(
        "topic", "create", topic, "-p", "3", "-r", "3", "--bootstrap-server", cluster.bootstrap
    )
    lines = "".join(f"k{i}:v{i}\n" for i in range(records))
    cluster.kraft(
        "produce",
        topic,
        "--key-separator",
        ":",
        "--acks",
        "all",
        "--bootstrap-server",
        cluster.bootstrap,
        input=lines,
    )
    out = cluster.kraft(
        "consume",
        topic,
        "--from-beginning",
        "--max-messages",
        str(records),
        "--timeout-ms",
        "30000",
        "--format",
        "json",
        "--bootstrap-server",
        cluster.bootstrap,
    )
    got = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert sorted((r["key"], r["value"]) for r in got) == sorted(
        (f"k{i}", f"v{i}") for i in range(records)
    ), out[-2000:]
    for partition in {r["partition"] for r in got}:
        offsets = [r["offset"] for r in got if r["partition"] == partition]
        assert offsets == list(range(len(offsets))), (partition, offsets)
