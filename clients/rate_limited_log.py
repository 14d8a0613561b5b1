"""Log lines for events that can repeat many times a second, at most one per kind and interval."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class RateLimitedLog:
    """At most one line per `interval_s` for one kind of event, with the count of those held back:
    a client that sends garbage in a loop must not fill the disk with our logs, and a consumer
    retrying against a dead coordinator must not fill its user's terminal."""

    def __init__(
        self,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger | None = None,
    ) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.logger = logger or log
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, kind: str, message: str, *args: Any) -> bool:
        return self._report(logging.WARNING, kind, message, args)

    def info(self, kind: str, message: str, *args: Any) -> bool:
        return self._report(logging.INFO, kind, message, args)

    def exception(self, kind: str, message: str, *args: Any) -> bool:
        """An ERROR line with the exception being handled and its traceback."""
        return self._report(logging.ERROR, kind, message, args, exc_info=True)

    def _report(
        self, level: int, kind: str, message: str, args: tuple, exc_info: bool = False
    ) -> bool:
        """True if the line was logged, False if it was held back (and counted)."""
        now = self.clock()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        self._last[kind] = now
        suffix = f" ({held} more like it since the last report)" if held else ""
        self.logger.log(level, message + suffix, *args, exc_info=exc_info)
        return True
