"""Makes the repo root and the suite's shared helpers (sim_scheduler, system_tools) importable
when pytest runs with --import-mode=importlib."""
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)
