"""The one launcher of `kraft node` processes, shared by `kraft dev` (entry/dev*.py), the chaos
cluster (chaos/cluster.py), the end-to-end tests and the benchmarks: each node's
server.properties, formatting, starting and stopping processes, waiting until they listen and
every broker is registered, and cluster.json. It runs kraft as a command, so it imports neither
broker/ nor entry/ (tests/test_layering.py)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping

from chaos.node_logs import ROOT, log_since
from kraft.fs import atomic_write

STOP_GRACE_S = 10.0


class NodeFiles:
    """A node's files under its own directory: server.properties and node.log (its data dir is
    each launcher's own choice). Mixed into a dataclass with a `node_dir`."""

    node_dir: pathlib.Path

    @property
    def config_path(self) -> pathlib.Path:
        return self.node_dir / "server.properties"

    @property
    def log_path(self) -> pathlib.Path:
        return self.node_dir / "node.log"


# --- server.properties ---


def quorum_voters(controllers: Iterable[tuple[int, str]]) -> str:
    """controller.quorum.voters from (node id, host:port) pairs: '1@h:9093,2@h:9193'."""
    return ",".join(f"{node_id}@{address}" for node_id, address in controllers)


def node_properties(
    node_id: int,
    role: str,
    address: str,
    voters: str,
    log_dir: pathlib.Path | str,
    settings: Mapping[str, str] = {},
) -> dict[str, str]:
    """A controller-only or broker-only node's server.properties, in file order: the keys that
    wire it into its cluster, then `settings` (which may override none of them only by
    convention: each launcher refuses the ones it manages). The one place every launcher's
    per-node config comes from."""
    listener = "CONTROLLER" if role == "controller" else "PLAINTEXT"
    return {
        "node.id": str(node_id),
        "process.roles": role,
        "listeners": f"{listener}://{address}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": voters,
        "log.dirs": str(log_dir),
        **settings,
    }


def properties_text(header: str, props: Mapping[str, str]) -> str:
    """The file: a comment line saying who wrote it, then key=value lines."""
    return f"# {header}\n" + "".join(f"{k}={v}\n" for k, v in props.items())


def write_properties(path: pathlib.Path, header: str, props: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, properties_text(header, props))


def free_ports(host: str, count: int) -> list[int]:
    """`count` distinct ports free right now; the sockets stay bound together so none repeats."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(family)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# --- running kraft ---


def kraft_env() -> dict[str, str]:
    """The environment of a kraft process started from this checkout. PYTHONPATH: `-m
    entry.main` must find this checkout whatever the current directory."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def kraft_command(*args: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "entry.main", *args]


def format_node(
    config: pathlib.Path,
    cluster_id: str,
    *,
    python: str = sys.executable,
    ignore_formatted: bool = False,
    timeout: float = 60,
) -> subprocess.CompletedProcess:
    """`kraft format --config F --cluster-id ID` in a process of its own; the caller judges the
    exit code (its error names the node)."""
    args = ["format", "--config", str(config), "--cluster-id", cluster_id]
    return subprocess.run(
        kraft_command(*args, *(["--ignore-formatted"] * ignore_formatted), python=python),
        capture_output=True,
        text=True,
        env=kraft_env(),
        cwd=ROOT,
        timeout=timeout,
    )


def launch(
    config: pathlib.Path,
    log_path: pathlib.Path,
    *,
    new_session: bool,
    python: str = sys.executable,
    prefix: tuple[str, ...] = (),
    banner: str | None = None,
    cwd: pathlib.Path | None = None,
) -> tuple[subprocess.Popen, int]:
    """Starts `kraft node --config F` (after `prefix`, e.g. `ip netns exec NS`) with stdout and
    stderr appended to its log, after a `banner` line if given. Returns the process and the
    log's size before it started: this run's lines start there."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        if banner is not None:
            log.write(f"\n{banner}\n".encode())
            log.flush()
        offset = log.tell()
        proc = subprocess.Popen(
            [*prefix, *kraft_command("node", "--config", str(config), python=python)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=kraft_env(),
            cwd=cwd,
            start_new_session=new_session,
        )
    return proc, offset


def is_listening(log_path: pathlib.Path, offset: int) -> bool:
    """The node logged its `listening on` line since `offset` (it serves from then on)."""
    return "listening on" in log_since(log_path, offset)


def broker_registrations(
    addresses: Mapping[int, str], timeout: float = 2.0, **security
) -> dict[int, set[int] | None]:
    """Each broker's Metadata answer, by node id: the broker ids it lists, None if it does not
    answer. A cluster is ready once every broker lists every broker."""
    import trio

    from clients.admin import broker_views

    views = trio.run(functools.partial(broker_views, list(addresses.values()), timeout, **security))
    return {node_id: views[address] for node_id, address in addresses.items()}


def unregistered(views: Mapping[int, set[int] | None]) -> set[int]:
    """Brokers whose Metadata does not list every broker (or that do not answer)."""
    wanted = set(views)
    return {i for i, seen in views.items() if not wanted <= (seen or set())}


# --- processes ---


def is_kraft_process(pid: int) -> bool:
    """A live (not zombie) process whose command line runs kraft. A pid read from an old
    cluster.json may since belong to something else, which must never be signalled."""
    if not isinstance(pid, int) or pid <= 1 or pid == os.getpid():
        return False
    try:  # Linux's procfs; elsewhere nothing counts as ours, so --stop never signals blindly
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        args = (
            pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        )
    except (OSError, IndexError):
        return False
    return state != "Z" and any(map(_runs_kraft, args))


def _runs_kraft(arg: str) -> bool:
    return arg == "entry.main" or arg.endswith("entry/main.py") or os.path.basename(arg) == "kraft"


@dataclasses.dataclass
class Target:
    label: str
    pid: int
    proc: subprocess.Popen | None = None  # our own child: poll() also reaps it
    controller: bool = False

    def alive(self) -> bool:
        return self.proc.poll() is None if self.proc is not None else is_kraft_process(self.pid)

    def send(self, signum: int) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass


def stop_in_order(targets: list[Target], grace: float = STOP_GRACE_S) -> list[tuple[Target, bool]]:
    """Brokers (and anything else) first, while the controllers they report to still answer,
    then the controllers; each (target, whether it had to be killed), live ones only."""
    return stop_together([t for t in targets if not t.controller], grace) + stop_together(
        [t for t in targets if t.controller], grace
    )


def stop_together(targets: list[Target], grace: float) -> list[tuple[Target, bool]]:
    """SIGTERM every live target, wait up to `grace` s for all, SIGKILL the rest (and wait up to
    5 s more for them to be gone)."""
    live = [t for t in targets if t.alive()]
    for t in live:
        t.send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(t.alive() for t in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = []
    for t in live:
        killed = t.alive()
        if killed:
            t.send(signal.SIGKILL)
        stopped.append((t, killed))
    deadline = time.monotonic() + 5
    while any(t.alive() for t in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    return stopped


# --- cluster.json: what runs where; chaos tooling reads id, roles, address, pid and data_dir ---


class ClusterFileError(ValueError):
    """cluster.json cannot be read; the message says what to do."""


def node_entry(
    node_id: int,
    roles: Iterable[str],
    address: str,
    pid: int | None,
    data_dir: pathlib.Path,
    config: pathlib.Path,
    log: pathlib.Path,
    *,
    metrics_address: str | None = None,
    kafka_address: str | None = None,
) -> dict:
    """One node's line of cluster.json; `metrics_address`: host:port of its metrics endpoint
    (metrics.listener), None when it serves none; `kafka_address`: a broker's Kafka wire
    listener, for Kafka's own clients (absent when it has none)."""
    entry = {
        "id": node_id,
        "roles": list(roles),
        "address": address,
        "pid": pid,
        "data_dir": str(data_dir),
        "config": str(config),
        "log": str(log),
        "metrics_address": metrics_address,
    }
    if kafka_address:
        entry["kafka_address"] = kafka_address
    return entry


def write_cluster_json(data: pathlib.Path, doc: dict) -> None:
    atomic_write(pathlib.Path(data) / "cluster.json", json.dumps(doc, indent=1) + "\n")


def read_cluster_json(data: pathlib.Path) -> dict | None:
    path = pathlib.Path(data) / "cluster.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:
        raise ClusterFileError(
            f"{path} is unreadable ({exc}); delete it if no cluster runs from {data}"
        ) from None
