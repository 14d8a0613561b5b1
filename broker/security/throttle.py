"""Failed authentications throttled per client host (pure: now_ms in): a host with too many recent
failures is refused at once until the oldest of them leaves the window."""

from __future__ import annotations

import collections


class FailedAuthThrottle:
    def __init__(
        self, max_failures: int = 5, window_ms: int = 60_000, max_hosts: int = 10_000
    ) -> None:
        self.max_failures, self.window_ms, self.max_hosts = max_failures, window_ms, max_hosts
        self._failures: dict[str, collections.deque] = {}

    def _recent(self, host: str, now_ms: int) -> collections.deque:
        times = self._failures.get(host)
        if times is None:
            return collections.deque()
        while times and now_ms - times[0] >= self.window_ms:
            times.popleft()
        if not times:
            del self._failures[host]
        return times

    def blocked_ms(self, host: str, now_ms: int) -> int:
        """0 when `host` may try; else how long until it may."""
        times = self._recent(host, now_ms)
        if len(times) < self.max_failures:
            return 0
        return times[-self.max_failures] + self.window_ms - now_ms

    def failed(self, host: str, now_ms: int) -> None:
        if host not in self._failures and len(self._failures) >= self.max_hosts:
            del self._failures[next(iter(self._failures))]  # forget the oldest host
        self._failures.setdefault(host, collections.deque()).append(now_ms)

    def succeeded(self, host: str) -> None:
        self._failures.pop(host, None)
