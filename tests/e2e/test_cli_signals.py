"""Stopping `kraft` client commands with signals, as a user or a supervisor does: SIGTERM to a
group member leaves the group and commits like Ctrl-C (exit 143), and Ctrl-C during
`kraft bench produce` always ends the process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from processes import ROOT

pytestmark = pytest.mark.e2e

FAST_GROUPS = [
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.num.partitions=1",
    "offsets.topic.replication.factor=1",
]


def spawn_kraft(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "entry.main", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_sigterm_to_a_group_member_commits_leaves_and_exits_143(node_factory, kraft):
    node = node_factory("node1", FAST_GROUPS).start()
    bs = ("--bootstrap-server", node.address)
    assert kraft("topic", "create", "t", "-p", "2", *bs).returncode == 0
    lines = "".join(f"{i}\n" for i in range(10))
    assert kraft("produce", "t", *bs, input=lines).returncode == 0
    member = spawn_kraft("consume", "t", "--group", "G", "--from-beginning", *bs)
    try:
        got = [member.stdout.readline() for _ in range(10)]
        assert sorted(int(v) for v in got) == list(range(10))
        member.send_signal(signal.SIGTERM)
        assert member.wait(20) == 128 + signal.SIGTERM
        stderr = member.stderr.read().decode()
        assert "consumed 10 records" in stderr and "Traceback" not in stderr, stderr
    finally:
        if member.poll() is None:
            member.kill()
            member.wait()
    # No ghost member for a session timeout (45 s): the group is empty at once, with the
    # positions the member reached committed.
    desc = json.loads(kraft("group", "describe", "G", "--format", "json", *bs).stdout)
    assert desc["state"] == "Empty" and desc["members"] == [], desc
    assert sum(o["committed_offset"] for o in desc["offsets"]) == 10, desc


@pytest.mark.timeout(600)
def test_ctrl_c_during_bench_produce_always_ends_the_process(node, kraft):
    bs = ("--bootstrap-server", node.address)
    assert kraft("topic", "create", "bench", "-p", "3", *bs).returncode == 0
    hung = []
    for attempt in range(12):
        bench = spawn_kraft(
            "bench",
            "produce",
            "--topic",
            "bench",
            "--num-records",
            "5000000",
            "--record-size",
            "100",
            *bs,
        )
        # Once it sends (its first progress line), interrupt at a different moment each time.
        line = b""
        while b"records sent" not in line:
            line = bench.stderr.readline()
            assert line, "kraft bench produce ended before sending"
        time.sleep(0.23 * attempt)
        bench.send_signal(signal.SIGINT)
        try:
            code = bench.wait(30)
        except subprocess.TimeoutExpired:
            hung.append(attempt)
            bench.kill()
            bench.wait()
            continue
        stderr = bench.stderr.read().decode()
        assert code == 130, (code, stderr)
        assert "Traceback" not in stderr, stderr
    assert not hung, f"kraft bench produce did not exit after Ctrl-C in attempts {hung}"
