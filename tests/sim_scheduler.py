"""The deterministic simulations' shared core (tests/kraft/raft/simulation.py,
tests/broker/replication/partition_sim.py): a seeded scheduler over a fake clock."""

from __future__ import annotations

import heapq
import random


class InvariantViolation(AssertionError):
    pass


class SeededScheduler:
    """Events run one at a time in (time, order scheduled) order; the clock jumps to each event's
    time and the subclass's `check_invariants` runs after every one. All randomness comes from
    `self.rng`, seeded, so a seed replays the same run."""

    # More events than this at one instant is a livelock (a deadline in the past?); None: no check.
    max_events_per_instant: int | None = None

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0
        self.events = 0
        self._queue: list = []
        self._seq = 0
        self._events_now = 0

    def at(self, time_ms: int, fn, *args) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time_ms, self._seq, fn, args))

    def run_until(self, predicate, max_ms: int) -> bool:
        """Run events until `predicate()` holds (True) or the clock would pass now + max_ms
        (then the clock stands there and the predicate decides)."""
        deadline = self.now + max_ms
        while not predicate():
            if not self._queue or self._queue[0][0] > deadline:
                self.now = max(self.now, deadline)
                return predicate()
            self._step()
        return True

    def run_for(self, ms: int) -> None:
        self.run_until(lambda: False, ms)

    def scheduled(self):
        """(time, order, fn, args) of every event not yet run, in no particular order."""
        return iter(self._queue)

    def _step(self) -> None:
        time_ms, _, fn, args = heapq.heappop(self._queue)
        if time_ms > self.now:
            self.now, self._events_now = time_ms, 0
        self._events_now += 1
        limit = self.max_events_per_instant
        if limit is not None and self._events_now > limit:
            self.fail(
                f"livelock: {limit} events without the clock moving (a deadline in the past?)"
            )
        fn(*args)
        self.events += 1
        self.check_invariants()

    def check_invariants(self) -> None:
        raise NotImplementedError

    def fail(self, what: str) -> None:
        raise InvariantViolation(
            f"seed {self.seed} at {self.now} ms after {self.events} events: {what}"
        )
