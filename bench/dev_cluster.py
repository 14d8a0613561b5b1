"""What the failover benchmarks share: the `kraft` command line run from this checkout, and the
nodes a `kraft dev --detach` cluster started, as its cluster.json names them."""

from __future__ import annotations

import pathlib
import subprocess

from chaos import launcher

ROOT = pathlib.Path(__file__).resolve().parents[1]


def kraft(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The `kraft` command line, run from this checkout with this interpreter."""
    done = subprocess.run(
        launcher.kraft_command(*args),
        cwd=ROOT,
        env=launcher.kraft_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"kraft {' '.join(args)} exited with {done.returncode}:\n{done.stderr.strip()}"
        )
    return done


class DevCluster:
    def __init__(self, data: pathlib.Path) -> None:
        self.data = data

    def nodes(self) -> list[dict]:
        return launcher.read_cluster_json(self.data)["nodes"]

    def brokers(self) -> dict[int, dict]:
        return {n["id"]: n for n in self.nodes() if "broker" in n["roles"]}

    def controllers(self) -> dict[int, dict]:
        return {n["id"]: n for n in self.nodes() if "controller" in n["roles"]}

    @property
    def bootstrap(self) -> str:
        return ",".join(n["address"] for n in self.brokers().values())
