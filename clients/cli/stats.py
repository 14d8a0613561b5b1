"""Latency statistics for the benchmarks: nearest-rank percentiles, a summary with the keys the
JSON output promises, and a power-of-two histogram for eyeballing tails."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values: the smallest value with at least q% of
    the values at or below it. It is always an observed value (no interpolation), as in
    Kafka's ProducerPerformance. None when there are no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(q / 100 * n))
    return sorted_values[min(rank, n) - 1]


@dataclass(frozen=True)
class LatencySummary:
    count: int
    avg_ms: float | None
    p50_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None

    def as_dict(self) -> dict:
        return {
            "latency_samples": self.count,
            "avg_ms": _round(self.avg_ms),
            "p50_ms": _round(self.p50_ms),
            "p99_ms": _round(self.p99_ms),
            "p999_ms": _round(self.p999_ms),
            "max_ms": _round(self.max_ms),
        }


def summarize(latencies_ms: Sequence[float]) -> LatencySummary:
    values = sorted(latencies_ms)
    avg = sum(values) / len(values) if values else None
    return LatencySummary(
        len(values),
        avg,
        percentile(values, 50),
        percentile(values, 99),
        percentile(values, 99.9),
        values[-1] if values else None,
    )


def histogram(latencies_ms: Sequence[float]) -> list[tuple[float, int]]:
    """Counts per bucket (upper bound in ms, count): buckets double from 1 ms, so a tail of slow
    requests shows up as its own rows instead of hiding in the mean."""
    counts: dict[float, int] = {}
    for v in latencies_ms:
        bound = 1.0
        while v > bound:
            bound *= 2
        counts[bound] = counts.get(bound, 0) + 1
    return sorted(counts.items())


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
