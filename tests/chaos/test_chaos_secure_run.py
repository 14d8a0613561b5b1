"""`chaos/run.sh --secure`: the chaos run over a cluster with certificates (mTLS between nodes,
ACLs on) whose workload signs in over SASL_SSL as admin; the audit must find nothing. Also the
secure node settings (fast, no namespaces) and the refusal of --secure with --docker."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from system_tools import require_tool

from chaos import netns
from chaos.cluster import plan, properties_text
from chaos.history import read_faults, read_history
from chaos.run import main
from chaos.secure import SecureFiles

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _props(text: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


@pytest.mark.slow  # real node processes
def test_secure_nodes_listen_with_tls_and_their_own_certificate(tmp_path):
    nodes = plan(tmp_path / "nodes")
    secure = SecureFiles.create(tmp_path / "secure", {n.id: n.host for n in nodes})
    broker = _props(properties_text(nodes[3], nodes, {}, secure))
    assert broker["listeners"] == "SASL_SSL://10.77.0.4:9092,INTERNAL://10.77.0.4:9094"
    assert broker["inter.broker.listener.name"] == "INTERNAL"
    assert broker["ssl.keystore.location"].endswith("/pki/kraft-node-4.pem")
    assert "User:kraft-node-6" in broker["super.users"]
    controller = _props(properties_text(nodes[0], nodes, {}, secure))
    assert controller["listeners"] == "CONTROLLER://10.77.0.1:9093"
    assert controller["ssl.client.auth"] == "required"
    assert secure.admin_scram()["security_protocol"] == "SASL_SSL"
    assert secure.admin_mtls()["ssl_certfile"].endswith("/pki/admin.pem")
    plain = _props(properties_text(nodes[3], nodes, {}))
    assert plain["listeners"] == "PLAINTEXT://10.77.0.4:9092" and "ssl.client.auth" not in plain


def test_secure_with_docker_is_refused(capsys):
    assert main(["--secure", "--docker"]) == 2
    assert "--secure runs the netns cluster" in capsys.readouterr().err


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_a_short_secure_run_is_clean(tmp_path):
    reason = netns.unavailable_reason()
    if reason:
        print(f"chaos run skipped: {reason}")
        pytest.skip(reason)
    require_tool("java")  # the run ends with the PySpark audit
    out = tmp_path / "run"
    env = {**os.environ, "VIRTUAL_ENV": str(pathlib.Path(sys.executable).parent.parent)}
    done = subprocess.run(
        [
            str(ROOT / "chaos" / "run.sh"),
            "--secure",
            "--duration",
            "15s",
            "--nemesis",
            "kill,pause,partition",
            "--interval",
            "4s",
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=840,
    )
    tail = done.stderr[-4000:]
    assert done.returncode != 2, tail  # 2: the run itself broke
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cluster"] == "netns+secure" and summary["drain"]["complete"], tail
    assert not summary["workload_errors"], summary["workload_errors"]
    assert "user admin signs in over SASL_SSL" in done.stderr, tail

    broker = _props((out / "nodes" / "node-4" / "server.properties").read_text())
    assert broker["listeners"].startswith("SASL_SSL://") and broker["ssl.client.auth"] == "required"
    assert (out / "secure" / "client.properties").stat().st_mode & 0o077 == 0
    ops = read_history(out / "history.jsonl")
    assert sum(1 for op in ops if op.f == "send" and op.type == "ok") >= 100, tail
    assert any(op.f == "commit" and op.type == "ok" for op in ops), tail
    assert len(read_faults(out / "faults.jsonl")) >= 2, tail
    assert netns.namespaces() == []
    # The audit (or the run's own check) found nothing: no acknowledged write lost or moved.
    assert done.returncode == 0, done.stdout[-6000:]
