"""bench/grpc_floor.py, the latency floor README and BENCHMARKS.md quote, at a tiny scale: both
consumers read every record sent, with one server and with two followers holding the high
watermark back (a follower loop that stalls, or a high watermark that never moves, would leave
records unread)."""

import json
import pathlib
import socket
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "grpc_floor.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("replicas", [1, 3])
def test_every_record_reaches_both_consumers(replicas):
    port = free_port()
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--server",
            "trio",
            "--replicas",
            str(replicas),
            "--rate",
            "200",
            "--seconds",
            "0.5",
            "--pairs",
            "1",
            "--port",
            str(port),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [r["mode"] for r in results] == ["poll", "push"]
    for r in results:
        assert r["replicas"] == replicas
        assert r["received"] == r["sent"] == 100
        assert 0 < r["p50_ms"] <= r["p99_ms"]
