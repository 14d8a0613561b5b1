"""`chaos/run.sh --docker` for real: the compose cluster's six containers (image built from this
checkout by docker/build-images.sh), the workload on the host, docker kill / pause and iptables
partitions inside the containers' namespaces, heal, drain, the data dirs copied out of the
volumes, the audit's report, and the compose project gone afterwards. Skipped, with the reason
printed, where no Docker engine runs (or the run could not enter the containers' namespaces)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys

import pytest
from system_tools import require_docker_image_tools, require_tool

from chaos import docker_cluster
from chaos.history import read_faults, read_history

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGE = "kraft:test"  # the tag tests/docker builds too: the second build is all cached
RUN_TIMEOUT_S = 900
# 0 only: 1 is the audit (or the run's own check) finding a violation, 2 a harness failure.
ACCEPTED_EXIT_CODES = (0,)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]


def _skip(capsys, reason: str) -> None:
    with capsys.disabled():  # pytest shows skip reasons only with -rs; this one should show
        print(f"\nSKIPPED chaos --docker run: {reason}", flush=True)
    pytest.skip(reason)


def _project_resources(project: str) -> list[str]:
    found = []
    for kind in ("container", "network", "volume"):
        listed = subprocess.run(
            [
                "docker",
                kind,
                "ls",
                *(["-a"] if kind == "container" else []),
                "-q",
                "--filter",
                f"label={docker_cluster.PROJECT_LABEL}={project}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        found += [f"{kind} {x}" for x in listed.stdout.split()]
    return found


def _run_chaos(out: pathlib.Path) -> tuple[int, str]:
    """run.sh in its own process group; past the timeout it gets SIGTERM (its finally blocks
    stop the containers and take the project down), then SIGKILL."""
    env = {**os.environ, "VIRTUAL_ENV": str(pathlib.Path(sys.executable).parent.parent)}
    err = out.parent / "run.stderr"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [
                str(ROOT / "chaos" / "run.sh"),
                "--docker",
                "--image",
                IMAGE,
                "--duration",
                "20s",
                "--nemesis",
                "kill,pause,partition",
                "--interval",
                "4s",
                "--seed",
                "1",
                "--out",
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,
        )
        try:
            code = proc.wait(RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(180)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            code = -1
    return code, err.read_text()[-5000:]


def test_a_short_docker_run_injects_faults_copies_data_and_audits(capsys, tmp_path):
    reason = docker_cluster.unavailable_reason(None)
    if reason:
        _skip(capsys, reason)
    require_docker_image_tools(capsys)
    require_tool("java", capsys)  # the run ends with the PySpark audit
    build = subprocess.run(
        ["docker/build-images.sh", IMAGE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert build.returncode == 0, (
        f"docker/build-images.sh failed:\n{build.stdout[-2000:]}\n{build.stderr[-3000:]}"
    )

    out = tmp_path / "run"
    project = None
    try:
        code, tail = _run_chaos(out)
        log = (out / "nemesis.log").read_text()
        project = re.search(r"compose project (kraft-chaos-[0-9a-f]+)", log).group(1)
        assert code in ACCEPTED_EXIT_CODES, tail  # 2: the run itself broke; -1: hung
    finally:
        # Whatever happened, nothing of the run's compose project is left behind.
        if project is None and (out / "nemesis.log").exists():
            found = re.search(r"kraft-chaos-[0-9a-f]+", (out / "nemesis.log").read_text())
            project = found and found.group(0)
        if project:
            leftover = _project_resources(project)
            if leftover:
                docker_cluster.remove_leftovers(
                    docker_cluster.compose_command() or ["docker-compose"]
                )
            assert not leftover, f"the run left {leftover} of compose project {project}"

    summary = json.loads((out / "summary.json").read_text())
    assert summary["exit_code"] == code and summary["drain"]["complete"], tail
    assert summary["cluster"]["docker"] == {"project": project, "image": IMAGE}
    assert (out / "docker-compose.chaos.json").exists()

    ops = read_history(out / "history.jsonl")
    assert sum(1 for op in ops if op.f == "send" and op.type == "ok") >= 100
    drained = [op for op in ops if op.process == "drain" and op.f == "poll" and op.type == "ok"]
    assert sum(len(pairs) for op in drained for pairs in op.reads().values()) > 0

    windows = read_faults(out / "faults.jsonl")
    assert len(windows) >= 2, tail
    assert all(w.end is not None and 0 <= w.start < w.end and w.targets for w in windows)
    assert log.count(" start ") == log.count(" end ") == len(windows) and "heal" in log

    for i in range(1, 7):
        node = out / "nodes" / f"node-{i}"
        assert (node / "data" / "meta.properties").exists(), f"node {i}'s data dir was not copied"
        assert f"node.id={i}" in (node / "server.properties").read_text()
        assert (node / "node.log").stat().st_size > 0
    assert any((out / "nodes" / f"node-{i}" / "data" / "chaos-0").is_dir() for i in (4, 5, 6))

    report = json.loads((out / "report.json").read_text())
    assert summary["audit_exit_code"] == (0 if report["ok"] else 1)
    assert "lost-write" in report["checks"] and report["checks"]["replica-divergence"]["ran"]
    assert (out / "report.html").exists()
    assert report["ok"] and not report["violations"], [
        v["message"] for v in report["violations"][:10]
    ]
