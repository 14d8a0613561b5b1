"""A latency histogram that costs one bisect and two additions to observe: what request and Raft
commit timings are counted with on the hot path, read by the metrics endpoint at scrape time."""

from __future__ import annotations

from bisect import bisect_left

# Upper bounds in seconds: from a fast local answer (0.5 ms) to a long-polling fetch (Kafka's
# fetch.max.wait.ms is 500 ms) and a stuck request (30 s, Kafka's request.timeout.ms).
LATENCY_BUCKETS_S = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class LatencyHistogram:
    """Observed from one thread only (no lock: `counts[i] += 1` from two threads could lose
    one); any thread may read a snapshot, which is at worst one observation behind."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound (+Inf)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def snapshot(self) -> tuple[list[tuple[str, int]], float, int]:
        """([(upper bound, cumulative count)], sum, count), the last bound "+Inf": Prometheus's
        histogram form."""
        counts, total = list(self.counts), self.total
        cumulative, running = [], 0
        for bound, n in zip((*map(repr, self.bounds), "+Inf"), counts):
            running += n
            cumulative.append((bound, running))
        return cumulative, total, running
