"""`kraft cluster info` prints the cluster id, the active controller and the brokers, as a summary
and table or as JSON; against a fake Admin, and against a real single `kraft dev` node."""

from __future__ import annotations

import json
import os
import pathlib
import select
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
THREE = {
    "cluster_id": "c-1",
    "controller_id": 1,
    "brokers": [
        {"id": 5, "host": "127.0.0.1", "port": 9094, "rack": None},
        {"id": 4, "host": "127.0.0.1", "port": 9093, "rack": "r1"},
    ],
}


@pytest.fixture
def described(fakes, monkeypatch):
    answer = dict(THREE)
    monkeypatch.setattr(type(fakes.admin), "describe_cluster", lambda self: answer, raising=False)
    return answer


def test_summary_and_broker_table_for_people(described, cli, capsys):
    assert cli(["cluster", "info"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "CLUSTER-ID  c-1",
        "CONTROLLER  1",
        "BROKERS     2 brokers",
        "",
        "ID  HOST       PORT  RACK",
        " 4  127.0.0.1  9093  r1",
        " 5  127.0.0.1  9094  -",
    ]


def test_json_for_scripts_has_null_for_no_controller(described, cli, capsys):
    described["controller_id"] = -1
    assert cli(["cluster", "info", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "cluster_id": "c-1",
        "controller_id": None,
        "brokers": [
            {"id": 4, "host": "127.0.0.1", "port": 9093, "rack": "r1"},
            {"id": 5, "host": "127.0.0.1", "port": 9094, "rack": None},
        ],
    }


def kraft(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "entry.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def dev_node(tmp_path):
    """A real `kraft dev` single node on a free port; yields its address."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "entry.main",
            "dev",
            "--data",
            str(tmp_path / "data"),
            "--port",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline, line = time.monotonic() + 30, b""
        while b"listening on" not in line:
            assert time.monotonic() < deadline and proc.poll() is None, (
                f"kraft dev did not start: {line!r}"
            )
            if select.select([proc.stdout], [], [], 0.2)[0]:
                line = proc.stdout.readline()
        yield line.split(b"listening on ", 1)[1].split(b",", 1)[0].decode()
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.e2e
def test_a_single_dev_node_is_the_one_broker(dev_node, tmp_path):
    result = kraft("cluster", "info", "--bootstrap-server", dev_node, "--format", "json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    host, port = dev_node.rsplit(":", 1)
    assert info["brokers"] == [{"id": 1, "host": host, "port": int(port), "rack": None}]
    meta = (tmp_path / "data" / "meta.properties").read_text()
    assert f"cluster.id={info['cluster_id']}" in meta
    table = kraft("cluster", "info", "--bootstrap-server", dev_node)
    assert table.returncode == 0 and f"CLUSTER-ID  {info['cluster_id']}" in table.stdout


def test_an_unreachable_cluster_is_one_line_of_help():
    result = kraft("cluster", "info", "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line] == [result.stderr.strip()]
    assert (
        "cannot reach the cluster at 127.0.0.1:1" in result.stderr and "kraft dev" in result.stderr
    )
