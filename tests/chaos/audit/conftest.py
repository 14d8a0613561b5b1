"""Makes the repo root and audit_helpers importable, and shares one lean SparkSession (local[2],
2 shuffle partitions, no UI) across every audit test: starting one costs 5-10 s."""

import sys
from pathlib import Path

import pytest
from system_tools import require_tool

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parents[2]), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    require_tool("java")
    from chaos.audit.job import create_session

    session = create_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
