"""Makes the repo root and the suite's shared helpers (sim_scheduler, system_tools) importable
when pytest runs with --import-mode=importlib, and marks the slow tests (see below)."""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# Where a test is slow by what it runs: real node processes (tests/e2e, tests/docker, anything
# marked e2e) and a SparkSession (the `spark` fixture: a JVM, then seconds per query). Other
# heavy tests carry @pytest.mark.slow themselves. `pytest -m "not slow"` is the inner loop.
_SLOW_DIRS = (_HERE / "e2e", _HERE / "docker")


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(str(item.path))
        if (
            item.get_closest_marker("e2e") is not None
            or "spark" in item.fixturenames
            or any(d in path.parents for d in _SLOW_DIRS)
        ):
            item.add_marker(pytest.mark.slow)
