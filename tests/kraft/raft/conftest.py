"""Makes the repo root and this directory's helper module (simulation) importable when pytest runs
with --import-mode=importlib; adds --sim-seeds to run more simulation seeds than CI does."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parents[2]), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def pytest_addoption(parser):
    parser.addoption(
        "--sim-seeds",
        type=int,
        default=None,
        help="how many seeds the Raft simulation runs (default 2000, or $KRAFT_SIM_SEEDS)",
    )
