"""The `clock` nemesis: every node runs with a preload library that adds an offset of its own
to its wall clock, so a fault moves one node's clock forward or back by seconds to minutes
(bump) or flips it between true time and an offset every few milliseconds (strobe); the heal
sets the offset back to 0.

What moves, and why: only CLOCK_REALTIME (Python's time.time()), never CLOCK_MONOTONIC. That is
what Jepsen's clock nemesis does: it calls settimeofday()/clock_settime(CLOCK_REALTIME) on the
node (its bump-time and strobe-time programs), which a real machine's monotonic clock ignores.
kraft times its elections, fetch and session timeouts and trio's deadlines with
time.monotonic(), and stamps record batches (LogAppendTime, the max timestamp, the time index),
retention and its logs with time.time(): the fault tests what a jumping wall clock does to
those, not a broken monotonic one (no real kernel has that).

Why not libfaketime (Debian's 0.9.10, FAKETIME_TIMESTAMP_FILE + FAKETIME_NO_CACHE +
FAKETIME_DONT_FAKE_MONOTONIC): it also wraps sleeps and polls, and there time.sleep() fails
with EINVAL (clock_nanosleep on the monotonic clock), a 1 ms epoll_wait takes 9 ms and a ready
poll 160 us; kraft under it ran 3-6 times slower and its quorum kept losing its leader. The
library here (wallclock.c, built with cc into the run's dir) wraps only clock_gettime on the
realtime clocks, gettimeofday and time, and reads the offset from a mapped 8-byte file: no
system call per reading, a write by the nemesis is seen at once."""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import random
import shutil
import struct
import subprocess
import threading
from collections.abc import Iterable

SOURCE = pathlib.Path(__file__).with_name("wallclock.c")
LIBRARY_NAME = "libkraftclock.so"
KINDS = ("bump", "strobe")
BUMP_S = (1.0, 300.0)  # |offset| of a bump: 1 s to 5 min, log-uniform
STROBE_S = (1.0, 60.0)  # the strobe's offset
STROBE_PERIOD_S = (0.01, 0.5)


class ClockError(RuntimeError):
    """The preload library cannot be built, or a control file cannot be written."""


@dataclasses.dataclass(frozen=True)
class ClockFault:
    kind: str  # bump | strobe
    offset_s: float  # bump: the new offset; strobe: the offset it flips to
    period_s: float = 0.0  # strobe: time between flips

    def describe(self) -> str:
        if self.kind == "bump":
            return f"bump {self.offset_s:+.1f}s"
        return f"strobe 0/{self.offset_s:+.1f}s every {self.period_s * 1000:.0f}ms"


def draw(rng: random.Random, kind: str | None = None) -> ClockFault:
    """A bump or a strobe (`kind`, else either); either sign; seconds to minutes, spread
    log-uniformly."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"clock fault {kind!r}: choose from {', '.join(KINDS)}")
    kind = kind or rng.choice(KINDS)
    lo, hi = BUMP_S if kind == "bump" else STROBE_S
    offset = round(math.exp(rng.uniform(math.log(lo), math.log(hi))), 3) * rng.choice((1, -1))
    period = round(rng.uniform(*STROBE_PERIOD_S), 3) if kind == "strobe" else 0.0
    return ClockFault(kind, offset, period)


def available() -> str | None:
    """Why the clock nemesis cannot run here (None when it can)."""
    if shutil.which("cc") is None:
        return "the clock nemesis builds a small preload library: install a C compiler (apt-get install -y gcc)"
    return None


def build(into: pathlib.Path) -> pathlib.Path:
    """Compile wallclock.c into `into`; returns the library's path."""
    into.mkdir(parents=True, exist_ok=True)
    out = into / LIBRARY_NAME
    done = subprocess.run(
        ["cc", "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE), "-ldl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise ClockError(f"cannot build {SOURCE.name}: {done.stderr.strip()[-500:]}")
    return out


class ClockFaults:
    """The control files (one per node, in `control_dir`), the library and the strobes running
    now."""

    def __init__(self, control_dir: pathlib.Path, node_ids: Iterable[int]) -> None:
        self.dir = pathlib.Path(control_dir)
        self.library = build(self.dir)
        self._strobes: dict[int, tuple[threading.Event, threading.Thread]] = {}
        for node_id in node_ids:
            self._write(node_id, 0.0)

    def control_file(self, node_id: int) -> pathlib.Path:
        return self.dir / f"node-{node_id}.offset"

    def prefix(self, node_id: int) -> list[str]:
        """The command prefix that starts a node with its clock offset (`env` execs, so the
        pid stays the node's own and signals reach it)."""
        return [
            "env",
            f"LD_PRELOAD={self.library}",
            f"KRAFT_CLOCK_FILE={self.control_file(node_id)}",
        ]

    def _write(self, node_id: int, offset_s: float) -> None:
        # In place, one aligned 8-byte write: the nodes map this file, a new one would not be
        # seen, and a reader never sees half an offset.
        path = self.control_file(node_id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, struct.pack("<q", round(offset_s * 1e9)), 0)
            finally:
                os.close(fd)
        except OSError as exc:
            raise ClockError(f"cannot write the clock control file {path}: {exc}") from exc

    def offset(self, node_id: int) -> float:
        return struct.unpack("<q", self.control_file(node_id).read_bytes()[:8])[0] / 1e9

    def start(self, node_id: int, fault: ClockFault) -> None:
        self.reset(node_id)
        if fault.kind == "bump":
            self._write(node_id, fault.offset_s)
            return
        stop = threading.Event()

        def flip() -> None:
            on = True
            while not stop.is_set():
                self._write(node_id, fault.offset_s if on else 0.0)
                on = not on
                stop.wait(fault.period_s)

        thread = threading.Thread(target=flip, name=f"strobe-{node_id}", daemon=True)
        self._strobes[node_id] = (stop, thread)
        thread.start()

    def reset(self, node_id: int) -> None:
        strobe = self._strobes.pop(node_id, None)
        if strobe is not None:
            strobe[0].set()
            strobe[1].join(5)
        self._write(node_id, 0.0)

    def reset_all(self) -> None:
        for path in sorted(self.dir.glob("node-*.offset")):
            self.reset(int(path.name.split("-")[1].split(".")[0]))
