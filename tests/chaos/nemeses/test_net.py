"""The net nemesis really shapes a node's packets: UDP round trips between two namespaces take
the delay while it is on and not after the heal; a loss of 100% drops every reply, duplication
doubles them. The behaviours a schedule draws stay in Jepsen's ranges."""

from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys
import time

import pytest

from chaos.nemeses.net import CHAIN, Behaviour, NetFaults, draw

ROOT = pathlib.Path(__file__).resolve().parents[3]
ECHO = (
    "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.bind(('0.0.0.0', 7007))\nprint('up', flush=True)\n"
    "while True:\n    data, peer = s.recvfrom(100)\n    s.sendto(data, peer)\n"
)


def probe(ns: str, address: str, count: int = 10) -> tuple[float, int]:
    """(median RTT in ms of the answered ones, replies received) for `count` UDP pings."""
    code = (
        f"import socket, time, statistics\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"s.settimeout(1.5)\nrtts, got = [], 0\n"
        f"for i in range({count}):\n"
        f"    t = time.monotonic(); s.sendto(str(i).encode(), ('{address}', 7007))\n"
        f"    try:\n        while True:\n"
        f"            if int(s.recv(100)) == i:\n"
        f"                rtts.append(time.monotonic() - t); got += 1\n"
        f"                s.settimeout(0.05)\n"
        f"            else:\n                got += 1\n"
        f"    except socket.timeout:\n        s.settimeout(1.5)\n"
        f"print(statistics.median(rtts) * 1000 if rtts else -1, got)\n"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rtt, got = done.stdout.split()
    return float(rtt), int(got)


@pytest.fixture
def echo(ns_pair):
    _, _, b, _ = ns_pair
    server = subprocess.Popen(
        ["ip", "netns", "exec", b, sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout.readline().strip() == "up"
    yield ns_pair
    server.kill()
    server.wait()


def faults(ns_pair) -> NetFaults:
    a, addr_a, b, addr_b = ns_pair
    names = {1: a, 2: b}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return NetFaults(lambda n: ["ip", "netns", "exec", names[n]], [addr_a, addr_b], env=env)


def test_delay_slows_round_trips_and_the_heal_restores_them(echo):
    a, _, b, addr_b = echo
    net = faults(echo)
    before, got = probe(a, addr_b)
    assert got == 10 and before < 20
    try:
        net.start(2, Behaviour(delay_ms=200, jitter_ms=20), seed=1)
        during, got = probe(a, addr_b)
        assert got == 10 and 170 < during < 400, during
    finally:
        net.heal_all()
    after, got = probe(a, addr_b)
    assert got == 10 and after < 20, after
    rules = subprocess.run(
        ["ip", "netns", "exec", b, "iptables", "-S"], capture_output=True, text=True
    ).stdout
    assert CHAIN not in rules and not net.shapers


def test_full_loss_drops_every_reply_and_duplication_doubles_them(echo):
    a, _, _, addr_b = echo
    net = faults(echo)
    try:
        net.start(2, Behaviour(loss=1.0), seed=1)
        assert probe(a, addr_b, 3)[1] == 0
        net.start(2, Behaviour(duplicate=1.0), seed=1)  # replaces the loss
        assert probe(a, addr_b, 5)[1] == 10
    finally:
        net.heal_all()
    assert probe(a, addr_b, 5)[1] == 5


def test_reordered_packets_overtake_delayed_ones(echo):
    a, _, _, addr_b = echo
    net = faults(echo)
    try:
        net.start(2, Behaviour(delay_ms=300, reorder=0.5), seed=3)
        start = time.monotonic()
        rtts = [probe(a, addr_b, 1)[0] for _ in range(8)]
    finally:
        net.heal_all()
    assert any(r < 50 for r in rtts) and any(r > 250 for r in rtts), rtts
    assert time.monotonic() - start < 30


def test_drawn_behaviours_stay_in_range_and_repeat_by_seed():
    drawn = [draw(random.Random(s)) for s in range(200)]
    assert drawn[:20] == [draw(random.Random(s)) for s in range(20)]
    for b in drawn:
        assert b.describe() != "nothing"
        assert b.delay_ms == 0 or 50 <= b.delay_ms <= 500
        assert b.jitter_ms <= b.delay_ms / 2 + 0.1
        assert b.loss == 0 or 0.01 <= b.loss <= 0.3
        assert not b.reorder or b.delay_ms
    assert all(
        any(getattr(b, k) for b in drawn) for k in ("delay_ms", "loss", "duplicate", "reorder")
    )
    assert Behaviour(delay_ms=100, jitter_ms=10, loss=0.05).netem_args() == [
        "delay",
        "100ms",
        "10ms",
        "loss",
        "5.00%",
    ]
