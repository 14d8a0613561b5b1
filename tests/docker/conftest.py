"""tests/docker: the compose helpers (compose_cluster.py) import by name under
--import-mode=importlib."""

from __future__ import annotations

import pathlib
import sys

if str(pathlib.Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
