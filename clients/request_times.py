"""Where one served request's time goes, as Kafka's RequestMetrics split it: waiting for the loop
(RequestQueueTimeMs) and parked until a partition moves (RemoteTimeMs); the rest is local.
Whoever measures a request (the metrics interceptor) makes one and sets it for the request; the
server carries it to the request's trio task, where the purgatory adds its parked time."""

from __future__ import annotations

import contextvars
import time


class RequestTimes:
    __slots__ = ("_parked", "_since", "queue_s", "remote_s")

    def __init__(self) -> None:
        self.queue_s = 0.0
        self.remote_s = 0.0
        self._parked = 0  # waits in progress: an acks=all Produce parks per partition
        self._since = 0.0

    def park(self) -> None:
        if self._parked == 0:
            self._since = time.perf_counter()
        self._parked += 1

    def unpark(self) -> None:
        """Remote time is the time at least one wait was parked: waits side by side count once."""
        self._parked -= 1
        if self._parked == 0:
            self.remote_s += time.perf_counter() - self._since


_TIMES: contextvars.ContextVar[RequestTimes | None] = contextvars.ContextVar(
    "kraft_request_times", default=None
)


def request_times() -> RequestTimes | None:
    """The times of the request this task serves, if anyone measures it."""
    return _TIMES.get()


def measure_request(times: RequestTimes | None) -> contextvars.Token:
    """Set `times` for the request the current task serves (reset with the token)."""
    return _TIMES.set(times)


def stop_measuring(token: contextvars.Token) -> None:
    _TIMES.reset(token)
