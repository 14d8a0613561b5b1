"""What the failover benchmarks share: the `kraft` command line run from this checkout, and the
nodes a `kraft dev --detach` cluster started, as its cluster.json names them."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def kraft(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The `kraft` command line, run from this checkout with this interpreter."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-m", "entry.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"kraft {' '.join(args)} exited with {done.returncode}:\n{done.stderr.strip()}")
    return done


class DevCluster:
    def __init__(self, data: pathlib.Path) -> None:
        self.data = data

    def nodes(self) -> list[dict]:
        return json.loads((self.data / "cluster.json").read_text())["nodes"]

    def brokers(self) -> dict[int, dict]:
        return {n["id"]: n for n in self.nodes() if "broker" in n["roles"]}

    def controllers(self) -> dict[int, dict]:
        return {n["id"]: n for n in self.nodes() if "controller" in n["roles"]}

    @property
    def bootstrap(self) -> str:
        return ",".join(n["address"] for n in self.brokers().values())
