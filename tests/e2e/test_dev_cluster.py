"""`kraft dev --controllers 3 --brokers 3` runs six real node processes: detached, every broker is
registered, `kraft cluster info` lists them, --stop ends all six and a re-run restarts the same
cluster; in the foreground a killed node is reported, --restart brings it back, SIGTERM ends all."""

from __future__ import annotations

import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import time

import pytest

from entry.dev_cluster import is_kraft_process

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parents[2]


def running(pid: int) -> bool:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def cluster_json(data: pathlib.Path) -> dict:
    return json.loads((data / "cluster.json").read_text())


@pytest.fixture
def data(tmp_path):
    """The cluster's data dir; whatever the test leaves running is killed afterwards."""
    d = tmp_path / "cluster"
    yield d
    if (d / "cluster.json").exists():
        doc = cluster_json(d)
        for pid in [doc.get("supervisor_pid")] + [n["pid"] for n in doc["nodes"]]:
            if pid and is_kraft_process(pid):
                os.kill(pid, signal.SIGKILL)


def brokers_seen(kraft, doc: dict) -> dict:
    bootstrap = ",".join(n["address"] for n in doc["nodes"] if n["roles"] == ["broker"])
    result = kraft("cluster", "info", "--bootstrap-server", bootstrap, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_detached_cluster_is_listed_then_stopped_then_restarted(data, kraft):
    started = kraft(
        "dev",
        "--controllers",
        "3",
        "--brokers",
        "3",
        "--port",
        "0",
        "--detach",
        "--data",
        str(data),
        timeout=120,
    )
    assert started.returncode == 0, started.stderr + _logs(data)
    assert "cluster ready" in started.stdout
    doc = cluster_json(data)
    assert [(n["id"], n["roles"]) for n in doc["nodes"]] == [
        (1, ["controller"]),
        (2, ["controller"]),
        (3, ["controller"]),
        (4, ["broker"]),
        (5, ["broker"]),
        (6, ["broker"]),
    ]
    assert doc["supervisor_pid"] is None and all(running(n["pid"]) for n in doc["nodes"])

    info = brokers_seen(kraft, doc)
    assert info["cluster_id"] == doc["cluster_id"] and info["controller_id"] in (1, 2, 3)
    assert [f"{b['host']}:{b['port']}" for b in info["brokers"]] == [
        n["address"] for n in doc["nodes"][3:]
    ]

    stopped = kraft("dev", "--stop", "--data", str(data))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.count("kraft dev: stopped node") == 6
    assert not any(running(n["pid"]) for n in doc["nodes"])

    again = kraft(
        "dev",
        "--controllers",
        "3",
        "--brokers",
        "3",
        "--port",
        "0",
        "--detach",
        "--data",
        str(data),
        timeout=120,
    )
    assert again.returncode == 0, again.stderr + _logs(data)
    assert brokers_seen(kraft, cluster_json(data))["cluster_id"] == doc["cluster_id"]
    # --port 0 again: the ports it had, so saved addresses keep working
    assert [n["address"] for n in cluster_json(data)["nodes"]] == [
        n["address"] for n in doc["nodes"]
    ]
    assert kraft("dev", "--stop", "--data", str(data)).returncode == 0


def test_foreground_reports_a_killed_node_adopts_its_restart_and_stops_all(data, kraft):
    err_path = data.parent / "dev.err"
    with open(err_path, "wb") as err:
        supervisor = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "entry.main",
                "dev",
                "--controllers",
                "3",
                "--brokers",
                "3",
                "--port",
                "0",
                "--data",
                str(data),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        ready = _read_until(supervisor, b"cluster ready", 90)
        assert b"cluster ready" in ready, err_path.read_text() + _logs(data)
        doc = cluster_json(data)
        assert doc["supervisor_pid"] == supervisor.pid
        broker = doc["nodes"][4]
        os.kill(broker["pid"], signal.SIGKILL)
        _wait(
            lambda: "node 5 (broker)" in err_path.read_text(), 10, "the supervisor reporting node 5"
        )
        assert "exited with code -9" in err_path.read_text() and supervisor.poll() is None

        restarted = kraft("dev", "--restart", "5", "--data", str(data), timeout=90)
        assert restarted.returncode == 0, restarted.stderr
        new_pid = cluster_json(data)["nodes"][4]["pid"]
        assert new_pid != broker["pid"] and running(new_pid)

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(60) == 0
        assert not any(running(n["pid"]) for n in cluster_json(data)["nodes"])
        assert f"stopped node 5 (broker), pid {new_pid}" in err_path.read_text()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait(10)


def _read_until(proc: subprocess.Popen, marker: bytes, timeout: float) -> bytes:
    # os.read, not readline: a buffered reader would hold lines select() no longer reports.
    seen, deadline = b"", time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            seen += os.read(proc.stdout.fileno(), 4096)
    return seen


def _wait(predicate, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not seen within {within} s"
        time.sleep(0.1)


def _logs(data: pathlib.Path) -> str:
    return "".join(
        f"\n--- {p}\n{p.read_text()[-1500:]}" for p in sorted(data.glob("node-*/node.log"))
    )
