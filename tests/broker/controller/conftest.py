"""Makes this directory's helper module (active_controller_driver) and the controller tests'
harness (controller_helpers) importable when pytest runs with --import-mode=importlib."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE), str(_HERE.parents[1] / "kraft" / "controller")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
