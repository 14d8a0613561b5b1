"""The consumer group driver's clock in milliseconds, monotonic (it times deadlines, never records):
read by the coordinator's I/O side and handed to the pure Membership core as `now_ms`."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.monotonic() * 1000)
