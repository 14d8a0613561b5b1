"""Makes the repo root and this directory's helper module (group_harness) importable when pytest
runs with --import-mode=importlib."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parents[2]), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)
