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


class NodeProcess:
    def __init__(self, data_dir: pathlib.Path, overrides: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.overrides = overrides or []
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "NodeProcess":
        cmd = [sys.executable, "-m", "broker.cli", "dev", "--data", str(self.data_dir),
               "--port", str(self.port)]
        for o in self.overrides:
            cmd += ["--override", o]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
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
    return subprocess.run([sys.executable, "-m", "broker.cli", *args], cwd=ROOT, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def kraft():
    return run_kraft
