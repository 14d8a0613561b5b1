"""Makes the repo root and this directory's helper module (raft_storage_harness) importable under
--import-mode=importlib, and gives every contract test both RaftLog implementations."""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parents[2]), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from raft_storage_harness import DiskHarness, MemoryHarness  # noqa: E402


@pytest.fixture(params=["memory", "disk"])
def harness(request, tmp_path):
    """Opens a RaftLog and crashes it: the in-memory twin, or FileRaftLog with a power loss."""
    return MemoryHarness() if request.param == "memory" else DiskHarness(tmp_path)
