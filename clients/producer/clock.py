"""The producer's wall clock in milliseconds, read by its I/O side (the sender and its mixins);
the pure core (accumulator.py) never reads a clock: `now_ms` is handed to it."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
