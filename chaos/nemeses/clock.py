"""The `clock` nemesis: every node runs under libfaketime with a control file of its own, so a
fault moves one node's clock forward or back by seconds to minutes (bump) or flips it between
true time and an offset every few milliseconds (strobe); the heal sets the offset back to +0.

What moves, and why: only CLOCK_REALTIME (Python's time.time()), never CLOCK_MONOTONIC
(FAKETIME_DONT_FAKE_MONOTONIC=1). That is what Jepsen's clock nemesis does: it calls
settimeofday()/clock_settime(CLOCK_REALTIME) on the node (its bump-time and strobe-time
programs), which a real machine's monotonic clock ignores. kraft times its elections, fetch and
session timeouts and trio's deadlines with time.monotonic(), and stamps record batches
(LogAppendTime, the max timestamp, the time index), retention and its logs with time.time(): the
fault tests what a jumping wall clock does to those, not a broken monotonic one (no real kernel
has that). FAKETIME_NO_CACHE=1 makes every time() read the control file (about 5 us a call here),
so a bump takes effect at once and a strobe's flips are seen."""
from __future__ import annotations

import dataclasses
import math
import pathlib
import random
import threading
from typing import Iterable

LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
KINDS = ("bump", "strobe")
BUMP_S = (1.0, 300.0)        # |offset| of a bump: 1 s to 5 min, log-uniform
STROBE_S = (1.0, 60.0)       # the strobe's offset
STROBE_PERIOD_S = (0.01, 0.5)


class ClockError(RuntimeError):
    """libfaketime is not installed, or a control file cannot be written."""


@dataclasses.dataclass(frozen=True)
class ClockFault:
    kind: str                  # bump | strobe
    offset_s: float            # bump: the new offset; strobe: the offset it flips to
    period_s: float = 0.0      # strobe: time between flips

    def describe(self) -> str:
        if self.kind == "bump":
            return f"bump {self.offset_s:+.1f}s"
        return f"strobe 0/{self.offset_s:+.1f}s every {self.period_s * 1000:.0f}ms"


def draw(rng: random.Random) -> ClockFault:
    """Half bumps, half strobes; either sign; seconds to minutes, spread log-uniformly."""
    kind = rng.choice(KINDS)
    lo, hi = BUMP_S if kind == "bump" else STROBE_S
    offset = round(math.exp(rng.uniform(math.log(lo), math.log(hi))), 3) * rng.choice((1, -1))
    period = round(rng.uniform(*STROBE_PERIOD_S), 3) if kind == "strobe" else 0.0
    return ClockFault(kind, offset, period)


def available() -> str | None:
    """Why the clock nemesis cannot run here (None when it can)."""
    if not pathlib.Path(LIBRARY).exists():
        return f"{LIBRARY} is missing (apt-get install -y faketime)"
    return None


class ClockFaults:
    """The control files (one per node, in `control_dir`) and the strobes running now."""

    def __init__(self, control_dir: pathlib.Path, node_ids: Iterable[int]) -> None:
        self.dir = pathlib.Path(control_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._strobes: dict[int, tuple[threading.Event, threading.Thread]] = {}
        for node_id in node_ids:
            self._write(node_id, 0.0)

    def control_file(self, node_id: int) -> pathlib.Path:
        return self.dir / f"node-{node_id}.faketime"

    def prefix(self, node_id: int) -> list[str]:
        """The command prefix that starts a node under libfaketime (`env` execs, so the pid
        stays the node's own and signals reach it)."""
        return ["env", f"LD_PRELOAD={LIBRARY}",
                f"FAKETIME_TIMESTAMP_FILE={self.control_file(node_id)}", "FAKETIME_NO_CACHE=1",
                "FAKETIME_DONT_FAKE_MONOTONIC=1"]

    def _write(self, node_id: int, offset_s: float) -> None:
        # Written aside and renamed: a time() call never reads a half-written offset.
        path = self.control_file(node_id)
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(f"{offset_s:+.3f}\n")
            tmp.replace(path)
        except OSError as exc:
            raise ClockError(f"cannot write the clock control file {path}: {exc}") from exc

    def offset(self, node_id: int) -> float:
        return float(self.control_file(node_id).read_text())

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
        for path in sorted(self.dir.glob("node-*.faketime")):
            self.reset(int(path.name.split("-")[1].split(".")[0]))
