"""Makes the repo root and this directory's helper module importable when pytest runs without
a top-level conftest (the shared tests/conftest.py may also do the former)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parents[2]), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)
