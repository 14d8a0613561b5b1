"""`kraft audit --master spark://...` on a real Spark standalone cluster (a master and two
workers started from the installed PySpark's own jars): the same verdict as local[*], with the
planted anomalies (a duplicate in the history, metadata divergence) found by the workers."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from audit_helpers import MS, Cluster, write_history
from system_tools import require_tool

from chaos.audit.job import run_audit
from chaos.history import Op

# About a minute on an idle 2-core machine (three JVMs, then one audit on each master); the
# bound leaves room for a loaded CI machine and the fixture kills the JVMs whatever happens.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """spark://127.0.0.1:<port> with two 1-core workers (chaos/audit/standalone.py)."""
    pytest.importorskip("pyspark")
    require_tool("java")
    from chaos.audit.standalone import standalone_cluster

    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=2) as url:
        yield url


def planted(root: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    c = Cluster(root / "cluster")
    c.topic("orders", partitions=1, batches=4)
    # node 3's metadata log holds another entry at the offset nodes 1 and 2 agree on
    from kraft.metadata import records as r

    c.controller_extra = {
        1: [r.NoOpRecord()],
        2: [r.NoOpRecord()],
        3: [r.ConfigRecord("topic", "orders", "retention.ms", "1")],
    }
    ops = c.history()
    for offset, value in enumerate([7, 8, 7]):  # value 7 lands at offsets 0 and 2 of t-0
        ops += [
            Op("dup", "invoke", "send", offset * MS, value, "t-0"),
            Op("dup", "ok", "send", offset * MS + 1, value, "t-0", offset),
        ]
    return c.write(), write_history(root / "history.jsonl", ops)


def test_audit_on_a_standalone_cluster_gives_the_local_verdict(standalone, spark, tmp_path):
    data, history = planted(tmp_path)
    local = run_audit(spark, [str(data)], history)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "KRAFT_AUDIT_DRIVER_MEMORY": "1g",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "entry.main",
            "audit",
            "--data",
            str(data),
            "--history",
            str(history),
            "--master",
            standalone,
            "--out",
            str(out),
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=360,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["inputs"]["master"] == standalone
    found = {name: c["violations"] for name, c in doc["checks"].items() if c["violations"]}
    assert found == local.totals
    assert {"duplicate", "metadata-divergence"} <= set(found)
    assert sorted(v["message"] for v in doc["violations"]) == sorted(
        v.message for v in local.violations
    )
