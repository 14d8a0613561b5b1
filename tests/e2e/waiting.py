"""Polling for end-to-end tests, where real processes converge in their own time."""

from __future__ import annotations

import time


def eventually(check, within: float, what: str):
    """`check()`'s first truthy result within `within` seconds, else an AssertionError naming
    `what` and the last result seen."""
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen within {within} s (last: {last!r})")
