"""Runs the randomised partition simulation (partition_chaos.py) over 1,000 seeds, invariants after
every event. More: KRAFT_PARTITION_SIM_SEEDS=20000; one: KRAFT_PARTITION_SIM_SEED=N."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from partition_chaos import run_chaos

DEFAULT_SEEDS = 1000
CHUNK = 100


def _seed_ranges() -> list[range]:
    single = os.environ.get("KRAFT_PARTITION_SIM_SEED")
    if single:
        return [range(int(single), int(single) + 1)]
    count = int(os.environ.get("KRAFT_PARTITION_SIM_SEEDS", DEFAULT_SEEDS))
    return [range(start, min(start + CHUNK, count)) for start in range(0, count, CHUNK)]


def pytest_generate_tests(metafunc):
    if "seeds" in metafunc.fixturenames:
        ranges = _seed_ranges()
        # The first chunk runs in the inner loop (-m "not slow"), every chunk in the full suite.
        params = [
            pytest.param(r, marks=[pytest.mark.slow] if i else []) for i, r in enumerate(ranges)
        ]
        metafunc.parametrize("seeds", params, ids=[f"seeds_{r.start}-{r.stop - 1}" for r in ranges])


def test_invariants_hold_under_faults_for_every_seed(seeds):
    """After every event: acknowledged records stay at their offsets on every live, registered ISR
    member; every replica's log below its HW is the one committed log; a leader's HW never goes
    back within its epoch; one leader per leader epoch. Crashes lose unflushed records, within the
    fault model written at the top of partition_chaos.py (one ISR copy always survives)."""
    totals = Counter()
    for seed in seeds:
        try:
            totals.update(run_chaos(seed).stats)
        except Exception as exc:  # an invariant, or an impossible state the core refused
            pytest.fail(
                f"partition simulation failed with seed {seed}: {type(exc).__name__}: "
                f"{exc}\nrerun just this seed with:\n  KRAFT_PARTITION_SIM_SEED={seed} "
                f"pytest -q tests/broker/replication/test_partition_simulation.py"
            )
    if len(seeds) >= CHUNK:
        # The run must have exercised what the invariants are about, or it proves nothing.
        for what in ("acked", "truncations", "leader_changes", "isr_changes", "lost_unflushed"):
            assert totals[what] > 0, f"no {what} in seeds {seeds.start}-{seeds.stop - 1}"
