"""Runs the randomised quorum simulation over many seeds (2,000 by default) and checks every
invariant after every event. More: KRAFT_SIM_SEEDS=20000 (or --sim-seeds); one: KRAFT_SIM_SEED=N."""

from __future__ import annotations

import os

import pytest
from raft_chaos import run_chaos

DEFAULT_SEEDS = 2000
CHUNK = 100


def _seed_ranges(config) -> list[range]:
    single = os.environ.get("KRAFT_SIM_SEED")
    if single:
        return [range(int(single), int(single) + 1)]
    count = config.getoption("--sim-seeds", default=None) or int(
        os.environ.get("KRAFT_SIM_SEEDS", DEFAULT_SEEDS)
    )
    return [range(start, min(start + CHUNK, count)) for start in range(0, count, CHUNK)]


def pytest_generate_tests(metafunc):
    if "seeds" in metafunc.fixturenames:
        ranges = _seed_ranges(metafunc.config)
        # The first chunk runs in the inner loop (-m "not slow"), every chunk in the full suite.
        params = [
            pytest.param(r, marks=[pytest.mark.slow] if i else []) for i, r in enumerate(ranges)
        ]
        metafunc.parametrize("seeds", params, ids=[f"seeds_{r.start}-{r.stop - 1}" for r in ranges])


def test_invariants_hold_under_faults_for_every_seed(seeds):
    for seed in seeds:
        try:
            run_chaos(seed)
        except Exception as exc:  # an invariant, or an impossible state the core refused
            pytest.fail(
                f"Raft simulation failed with seed {seed}: {type(exc).__name__}: {exc}\n"
                f"rerun just this seed with:\n  KRAFT_SIM_SEED={seed} "
                f"pytest -q tests/kraft/raft/test_raft_simulation.py"
            )
