"""Requests per API, listener and error code, and their latency: Kafka's RequestMetrics
(RequestsPerSec, ErrorsPerSec, TotalTimeMs and its RequestQueueTimeMs, LocalTimeMs and
RemoteTimeMs parts). Every listener reports through `observe_request`,
the gRPC listeners from one server interceptor (interceptor.py)."""

from __future__ import annotations

from collections.abc import Mapping

from clients.errors import error_name
from kraft.latency_histogram import LatencyHistogram


class RequestStats:
    """Plain dicts, not prometheus_client's locked children: a request costs a few dict updates
    on the thread that answers it. Each listener is observed from one thread (the gRPC listeners
    from grpcio's asyncio thread), so no key has two writers; the scrape thread copies."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}  # (api, listener)
        self.errors: dict[tuple[str, str, str], int] = {}  # (api, listener, error name)
        self.total_time: dict[tuple[str, str], LatencyHistogram] = {}
        # The parts, for requests whose listener measures them (queue_s, remote_s given).
        self.queue_time: dict[tuple[str, str], LatencyHistogram] = {}
        self.local_time: dict[tuple[str, str], LatencyHistogram] = {}
        self.remote_time: dict[tuple[str, str], LatencyHistogram] = {}

    def observe_request(
        self,
        api: str,
        listener: str,
        error_code: int | str | Mapping,
        seconds: float,
        *,
        queue_s: float | None = None,
        remote_s: float | None = None,
    ) -> None:
        """One request of `api` (Kafka's API name: "Produce", "Fetch", ...) answered on
        `listener` after `seconds`. `error_code`: the response's code (an int, or a name such as
        "CANCELLED" for an answer that carried none), or {code: how many} for a response with
        a code per partition, which Kafka's ErrorsPerSec counts one by one. `queue_s`: of
        those seconds, waiting to be handled; `remote_s`: parked (the rest is local)."""
        key = (api, listener)
        self.requests[key] = self.requests.get(key, 0) + 1
        _histogram(self.total_time, key).observe(seconds)
        if queue_s is not None and remote_s is not None:
            _histogram(self.queue_time, key).observe(queue_s)
            _histogram(self.remote_time, key).observe(remote_s)
            _histogram(self.local_time, key).observe(max(0.0, seconds - queue_s - remote_s))
        errors = self.errors
        if type(error_code) is dict or isinstance(error_code, Mapping):  # dict: no ABC check
            for code, n in error_code.items():
                name = (api, listener, _name(code))
                errors[name] = errors.get(name, 0) + n
        else:
            name = (api, listener, _name(error_code))
            errors[name] = errors.get(name, 0) + 1


def _histogram(histograms: dict, key: tuple[str, str]) -> LatencyHistogram:
    histogram = histograms.get(key)
    if histogram is None:
        histogram = histograms[key] = LatencyHistogram()
    return histogram


_NAMES: dict[int, str] = {}


def _name(code: int | str) -> str:
    if isinstance(code, str):
        return code
    name = _NAMES.get(code)
    if name is None:
        name = _NAMES[code] = error_name(code)
    return name
