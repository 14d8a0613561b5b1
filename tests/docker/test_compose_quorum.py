"""`docker compose up quorum` for real: builds the image from this checkout (docker/build-images.sh,
which reuses the base image when present), starts the 3-controller, 3-broker compose cluster
under a project name of its own, produces and consumes through it, then tears it all down.
Skipped, with the reason printed, where no Docker engine runs."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from chaos.docker_cluster import free_ports

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGE = "kraft:test"
CONTROLLERS = "controller1:9093,controller2:9093,controller3:9093"
RECORDS = 100

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]


def _run(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kwargs)


def _skip(capsys, reason: str) -> None:
    # pytest shows skip reasons only with -rs; this one should be read in CI's log as it is.
    with capsys.disabled():
        print(f"\nSKIPPED tests/docker: {reason}", flush=True)
    pytest.skip(reason)


def _docker_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    try:
        info = _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer in 30 s"
    if info.returncode != 0 or not info.stdout.strip():
        return f"no Docker engine answers `docker info`: {(info.stderr or info.stdout).strip()[:300]}"
    return None


def _compose_command() -> list[str] | None:
    if _run(["docker", "compose", "version"], timeout=30).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


class ComposeCluster:
    def __init__(self, compose: list[str]) -> None:
        ports = free_ports(3)
        self.project = f"kraft-test-{uuid.uuid4().hex[:8]}"
        self.env = {**os.environ, "KRAFT_IMAGE": IMAGE,
                    **{f"KRAFT_BROKER{i}_PORT": str(p) for i, p in enumerate(ports, 1)}}
        self.base = [*compose, "-p", self.project, "-f", str(ROOT / "docker-compose.yml")]
        self.bootstrap = ",".join(f"broker{i}:{p}" for i, p in enumerate(ports, 1))

    def compose(self, *args: str, timeout: float = 120, input: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess:
        done = _run([*self.base, *args], timeout=timeout, env=self.env, input=input)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
                                 f"\n--- cluster logs ---\n{self.logs()}")
        return done

    def kraft(self, *args: str, timeout: float = 120, input: str | None = None) -> str:
        """A kraft command in a one-off `client` container on the cluster's network."""
        return self.compose("run", "--rm", "-T", "client", "kraft", *args, timeout=timeout,
                            input=input).stdout

    def health(self, service: str) -> str:
        cid = self.compose("ps", "-q", service).stdout.strip()
        if not cid:
            return "no container"
        state = _run(["docker", "inspect", "--format", "{{.State.Status}} {{if .State.Health}}"
                      "{{.State.Health.Status}}{{end}}", cid], timeout=30)
        return state.stdout.strip()

    def logs(self) -> str:
        try:
            return _run([*self.base, "logs", "--no-color", "--tail", "30"], timeout=60,
                        env=self.env).stdout[-8000:]
        except subprocess.TimeoutExpired:
            return "(docker compose logs timed out)"

    def down(self) -> None:
        _run([*self.base, "down", "-v", "--remove-orphans", "--timeout", "20"], timeout=180,
             env=self.env)


def test_compose_quorum_serves_produce_and_consume(capsys):
    problem = _docker_problem()
    if problem:
        _skip(capsys, problem)
    compose = _compose_command()
    if compose is None:
        _skip(capsys, "neither `docker compose` nor docker-compose is installed")

    started = time.monotonic()
    build = _run(["docker/build-images.sh", IMAGE], timeout=1200,
                 env={**os.environ, "PYTHON": sys.executable})
    assert build.returncode == 0, f"docker/build-images.sh failed:\n{build.stdout[-2000:]}\n{build.stderr[-3000:]}"
    built = time.monotonic()
    compose = _compose_command() or compose   # the build step may have added `docker compose`

    cluster = ComposeCluster(compose)
    try:
        # up returns once the six nodes are healthy (quorum depends on that), then quorum prints.
        cluster.compose("up", "-d", "quorum", timeout=300)
        deadline = time.monotonic() + 180
        while (state := cluster.health("quorum")) != "running healthy":
            assert time.monotonic() < deadline, f"quorum is {state!r} after 180 s:\n{cluster.logs()}"
            time.sleep(2)
        healthy = time.monotonic()
        printed = cluster.compose("logs", "--no-color", "quorum").stdout
        assert "LeaderId" in printed and "CLUSTER-ID" in printed, printed

        quorum = json.loads(cluster.kraft("quorum", "describe", "--bootstrap-controller", CONTROLLERS,
                                          "--format", "json"))
        assert quorum["leader_id"] in (1, 2, 3), quorum
        assert sorted(v["id"] for v in quorum["voters"]) == [1, 2, 3], quorum
        info = json.loads(cluster.kraft("cluster", "info", "--bootstrap-server", cluster.bootstrap,
                                        "--format", "json"))
        assert sorted(b["id"] for b in info["brokers"]) == [4, 5, 6], info

        cluster.kraft("topic", "create", "compose-smoke", "-p", "3", "-r", "3",
                      "--bootstrap-server", cluster.bootstrap)
        lines = "".join(f"k{i}:v{i}\n" for i in range(RECORDS))
        cluster.kraft("produce", "compose-smoke", "--key-separator", ":", "--acks", "all",
                      "--bootstrap-server", cluster.bootstrap, input=lines)
        out = cluster.kraft("consume", "compose-smoke", "--from-beginning", "--max-messages",
                            str(RECORDS), "--timeout-ms", "30000", "--format", "json",
                            "--bootstrap-server", cluster.bootstrap)
        records = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert sorted((r["key"], r["value"]) for r in records) == sorted(
            (f"k{i}", f"v{i}") for i in range(RECORDS)), out[-2000:]
        for partition in {r["partition"] for r in records}:
            offsets = [r["offset"] for r in records if r["partition"] == partition]
            assert offsets == list(range(len(offsets))), (partition, offsets)
        print(f"image build {built - started:.0f} s, compose up to healthy {healthy - built:.0f} s, "
              f"produce+consume {time.monotonic() - healthy:.0f} s")
    finally:
        cluster.down()
    leftover = _run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={cluster.project}"],
                    timeout=30).stdout.strip()
    assert not leftover, f"containers of {cluster.project} left after down: {leftover}"
