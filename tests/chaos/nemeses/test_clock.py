"""The clock nemesis moves a faked process's wall clock and only that: a child python started
with the node's prefix prints time.time() and time.monotonic(); a bump moves the first by the
offset and leaves the second alone, a strobe flips it, the reset brings it back; its sleeps and
polls take the time they should (libfaketime's did not)."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest

from chaos.nemeses.clock import ClockFault, ClockFaults, available, draw

CHILD = (
    "import sys, time\nfor line in sys.stdin:\n"
    "    print(time.time(), time.monotonic(), flush=True)\n"
)
TIMING = (
    "import select, time\nep = select.epoll()\nt = time.monotonic()\n"
    "for _ in range(100):\n    time.sleep(0.001)\n    ep.poll(0.001)\n"
    "print(time.monotonic() - t)\n"
)


@pytest.fixture
def faked(tmp_path):
    if available():
        pytest.skip(available())
    clocks = ClockFaults(tmp_path / "clock", [1])
    child = subprocess.Popen(
        clocks.prefix(1) + [sys.executable, "-c", CHILD],
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )

    def skew() -> tuple[float, float]:
        """(the child's wall clock minus ours, its monotonic clock minus ours). Both are read
        so that a slow round trip (a loaded machine) does not count: the wall clocks are
        compared through each process's wall-minus-monotonic, and the child's monotonic
        reading must fall between ours before and after the question."""
        before = time.monotonic()
        child.stdin.write("\n")
        child.stdin.flush()
        child_wall, child_mono = map(float, child.stdout.readline().split())
        after = time.monotonic()
        wall = (child_wall - child_mono) - (time.time() - time.monotonic())
        if child_mono < before:
            return wall, child_mono - before
        return wall, max(0.0, child_mono - after)

    yield clocks, skew
    clocks.reset_all()
    child.kill()
    child.wait()


def test_a_bump_moves_the_wall_clock_not_the_monotonic_one(faked):
    clocks, skew = faked
    wall, mono = skew()
    assert abs(wall) < 0.5 and abs(mono) < 0.5
    clocks.start(1, ClockFault("bump", -90.0))
    wall, mono = skew()
    assert -90.5 < wall < -89.5 and abs(mono) < 0.5
    clocks.start(1, ClockFault("bump", 240.0))
    assert 239.5 < skew()[0] < 240.5
    clocks.reset(1)
    assert abs(skew()[0]) < 0.5 and clocks.offset(1) == 0


def test_a_strobe_flips_the_clock_until_the_reset(faked):
    clocks, skew = faked
    clocks.start(1, ClockFault("strobe", 30.0, 0.02))
    seen = set()
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        seen.add(round(skew()[0] / 30))
        time.sleep(0.007)
    assert seen == {0, 1}
    clocks.reset(1)
    time.sleep(0.05)
    assert all(abs(skew()[0]) < 0.5 for _ in range(20))


def test_drawn_faults_are_seconds_to_minutes_either_way():
    drawn = [draw(random.Random(s)) for s in range(300)]
    assert drawn[:10] == [draw(random.Random(s)) for s in range(10)]
    assert {f.kind for f in drawn} == {"bump", "strobe"}
    assert any(f.offset_s < 0 for f in drawn) and any(f.offset_s > 0 for f in drawn)
    assert all(1 <= abs(f.offset_s) <= 300 for f in drawn)
    assert all(0.01 <= f.period_s <= 0.5 for f in drawn if f.kind == "strobe")


def test_sleeps_and_polls_are_left_alone(faked):
    clocks, _ = faked
    clocks.start(1, ClockFault("bump", 120.0))
    done = subprocess.run(
        clocks.prefix(1) + [sys.executable, "-c", TIMING],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert 0.19 < float(done.stdout) < 1.5  # 100 x (1 ms sleep + 1 ms poll)
