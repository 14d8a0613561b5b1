"""The `kraft dev` command for a multi-process cluster: start (format, launch, wait until every broker
is registered), supervise until Ctrl-C, --stop and --restart, on top of entry.dev_cluster."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TextIO

from chaos.launcher import broker_registrations, is_listening
from chaos.node_logs import log_tail
from clients.cli.output import Progress, print_table
from entry.dev_cluster import (
    DevClusterError,
    NodePlan,
    Target,
    check_ports_free,
    check_reuse,
    cluster_id_for,
    is_kraft_process,
    launch,
    node_entry,
    plan_cluster,
    read_cluster_json,
    reusing_ports,
    shape,
    start_command,
    stop_targets,
    targets_of,
    write_cluster_json,
    write_properties,
)
from entry.dev_secure import SecureSetup, bootstrap_admin, secure_plans

POLL_S = 0.2


class _Interrupted(Exception):
    """Ctrl-C or SIGTERM arrived: stop the nodes and exit cleanly."""


@dataclasses.dataclass
class _Launched:
    plan: NodePlan
    proc: subprocess.Popen
    log_offset: int

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise DevClusterError(
                f"{self.plan.label} exited with code {self.proc.returncode} before it "
                f"was ready; read its log: {self.plan.log_path}"
                f"{log_tail(self.plan.log_path, self.log_offset)}"
            )


class _StopRequest:
    """Ctrl-C and SIGTERM set a flag the loops check, rather than raising inside trio.run."""

    def __enter__(self) -> _StopRequest:
        self.signum: int | None = None
        self._old = {s: signal.signal(s, self._set) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def _set(self, signum: int, _frame: object) -> None:
        self.signum = signum

    def __exit__(self, *exc_info: object) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)

    def check(self) -> None:
        if self.signum is not None:
            raise _Interrupted()


def _wait_listening(
    nodes: list[_Launched],
    deadline: float,
    timeout: float,
    stop: _StopRequest | None,
    progress: Progress,
) -> None:
    waiting = list(nodes)
    while True:
        if stop is not None:
            stop.check()
        for n in nodes:
            n.check_alive()
        before = len(waiting)
        waiting = [n for n in waiting if not is_listening(n.plan.log_path, n.log_offset)]
        if not waiting:
            return
        if len(waiting) != before:
            progress.update(f"kraft dev: {len(nodes) - len(waiting)}/{len(nodes)} nodes listening")
        if time.monotonic() > deadline:
            n = waiting[0]
            raise DevClusterError(
                f"{n.plan.label} is not listening after {timeout:g} s; read its log: "
                f"{n.plan.log_path}{log_tail(n.plan.log_path, n.log_offset)}"
            )
        time.sleep(POLL_S)


def _wait_registered(
    launched: list[_Launched],
    deadline: float,
    timeout: float,
    stop: _StopRequest,
    progress: Progress,
    secure: SecureSetup | None = None,
) -> None:
    """Until every broker's Metadata lists every broker, so any bootstrap server sees them all.
    A secure cluster is asked on its INTERNAL listeners with the admin's certificate."""
    brokers = [n for n in launched if "broker" in n.plan.roles]
    wanted, shown = {n.plan.id for n in brokers}, None
    probe = {n.plan.id: secure.internal[n.plan.id] if secure else n.plan.address for n in brokers}
    security = secure.admin_mtls() if secure else {}
    while True:
        stop.check()
        for n in launched:
            n.check_alive()
        by_id = broker_registrations(probe, 2.0, **security)
        views = {n.plan.address: by_id[n.plan.id] for n in brokers}
        silent = [n for n in brokers if views[n.plan.address] is None]
        seen = set.intersection(*views.values()) if not silent else set()
        if not silent and wanted <= seen:
            return
        if len(wanted & seen) != shown:
            shown = len(wanted & seen)
            progress.update(f"kraft dev: {shown}/{len(wanted)} brokers registered")
        if time.monotonic() > deadline:
            if silent:
                n = silent[0]
                raise DevClusterError(
                    f"{n.plan.label} at {n.plan.address} does not answer Metadata "
                    f"after {timeout:g} s; read its log: {n.plan.log_path}"
                )
            n = next(n for n in brokers if n.plan.id not in seen)
            listed = ", ".join(map(str, sorted(seen))) or "none"
            raise DevClusterError(
                f"{n.plan.label} has not joined the cluster after {timeout:g} s (the "
                f"brokers list {listed}); read its log: {n.plan.log_path}"
            )
        time.sleep(0.5)


def _current_targets(data: pathlib.Path, launched: list[_Launched]) -> dict[int, Target]:
    """Our children, except nodes `kraft dev --restart` started again since (by cluster.json)."""
    targets = {
        n.plan.id: Target(n.plan.label, n.proc.pid, n.proc, "controller" in n.plan.roles)
        for n in launched
    }
    try:
        doc = read_cluster_json(data) or {}
    except DevClusterError:
        doc = {}
    for entry in doc.get("nodes", []):
        own = targets.get(entry.get("id"))
        if own is not None and entry.get("pid") and entry["pid"] != own.pid:
            targets[entry["id"]] = Target(own.label, entry["pid"], controller=own.controller)
    return targets


def _supervise(
    data: pathlib.Path, launched: list[_Launched], stop: _StopRequest, err: TextIO
) -> None:
    """Report each node that exits, once, and keep the rest running: chaos tests kill nodes."""
    logs = {n.plan.id: n.plan.log_path for n in launched}
    reported: set[tuple[int, int]] = set()
    while stop.signum is None:
        time.sleep(POLL_S)
        for node_id, t in _current_targets(data, launched).items():
            if (node_id, t.pid) in reported or t.alive():
                continue
            reported.add((node_id, t.pid))
            code = f" with code {t.proc.returncode}" if t.proc is not None else ""
            print(
                f"kraft dev: {t.label}, pid {t.pid}, exited{code}; read its log: {logs[node_id]}. "
                f"The others keep running; restart it with: kraft dev --restart {node_id} "
                f"--data {data}",
                file=err,
                flush=True,
            )


def start_cluster(
    data: pathlib.Path,
    plans: list[NodePlan],
    *,
    detach: bool,
    wait_timeout: float,
    format_node: Callable[[pathlib.Path, str], None],
    out: TextIO,
    err: TextIO,
    secure: SecureSetup | None = None,
) -> int:
    """Write, format and launch every node, wait until the cluster serves, print it, then either
    return (--detach) or supervise until Ctrl-C / SIGTERM and stop every node."""
    data = pathlib.Path(data)
    check_reuse(data, plans, read_cluster_json(data))
    cluster_id = cluster_id_for(data, plans)
    check_ports_free(plans)
    launched: list[_Launched] = []
    ready = False
    print(f"kraft dev: starting {len(plans)} nodes in {data}", file=err, flush=True)
    with _StopRequest() as stop:
        try:  # after Ctrl-C before the cluster is ready, exit 130 as a shell reports an interrupt
            for p in plans:
                write_properties(p)
                format_node(p.config_path, cluster_id)
            for p in plans:
                stop.check()
                launched.append(_Launched(p, *launch(p.config_path, p.log_path, detach=detach)))
            write_cluster_json(
                data,
                {
                    "cluster_id": cluster_id,
                    "supervisor_pid": None if detach else os.getpid(),
                    "nodes": [node_entry(n.plan, n.proc.pid) for n in launched],
                },
            )
            deadline, progress = time.monotonic() + wait_timeout, Progress(stream=err)
            try:
                _wait_listening(launched, deadline, wait_timeout, stop, progress)
                _wait_registered(launched, deadline, wait_timeout, stop, progress, secure)
                if secure is not None:
                    bootstrap_admin(
                        secure,
                        [n.plan for n in launched if "broker" in n.plan.roles],
                        max(5.0, deadline - time.monotonic()),
                    )
            finally:
                progress.done()
            ready = True
            _print_ready(data, launched, detach, out, secure)
            if not detach:
                _supervise(data, launched, stop, err)
        except _Interrupted:
            pass
        finally:
            if launched and not (detach and ready):
                print("kraft dev: stopping the cluster", file=err, flush=True)
                for line in stop_targets(list(_current_targets(data, launched).values())):
                    print(f"kraft dev: {line}", file=err, flush=True)
    return 0 if ready else 130


def _print_ready(
    data: pathlib.Path,
    launched: list[_Launched],
    detach: bool,
    out: TextIO,
    secure: SecureSetup | None = None,
) -> None:
    print_table(
        ("ID", "ROLES", "ADDRESS", "PID"),
        [(n.plan.id, ",".join(n.plan.roles), n.plan.address, n.proc.pid) for n in launched],
        file=out,
    )
    bootstrap = ",".join(n.plan.address for n in launched if "broker" in n.plan.roles)
    print(
        f"\nbrokers: {bootstrap} (export KRAFT_BOOTSTRAP={bootstrap}); node logs: "
        f"{data}/node-<id>/node.log",
        file=out,
    )
    kafka = ",".join(n.plan.kafka_address for n in launched if n.plan.kafka_address)
    if kafka:  # the brokers' Kafka wire listeners, for Kafka's own clients
        print(f"Kafka clients: {kafka} (e.g. kcat -b {kafka} -L)", file=out)
    if secure is not None:
        print(
            f"secure: clients use SASL_SSL (SCRAM-SHA-256) and nodes mTLS, CA {secure.truststore}; "
            f"user admin, password in {secure.client_properties}; e.g.\n"
            f"  kraft topic list --bootstrap-server {bootstrap} --command-config "
            f"{secure.client_properties}\n"
            f"  kraft quorum describe --bootstrap-controller {_controllers(launched)} "
            f"--command-config {secure.admin_tls_properties}",
            file=out,
        )
    print(
        f"kraft dev: cluster ready; stop with {'' if detach else 'Ctrl-C or: '}kraft dev --stop "
        f"--data {data}",
        file=out,
        flush=True,
    )


def _controllers(launched: list[_Launched]) -> str:
    return ",".join(n.plan.address for n in launched if "controller" in n.plan.roles)


def stop_cluster(data: pathlib.Path, out: TextIO) -> int:
    """`kraft dev --stop`: the supervisor (which stops its own children too) and the brokers, then
    the controllers."""
    doc = read_cluster_json(data)
    if doc is None:
        print(
            f"kraft dev: nothing to stop: {data} has no cluster.json (no kraft dev ran there)",
            file=out,
        )
        return 0
    lines = stop_targets(targets_of(doc))
    for line in lines:
        print(f"kraft dev: {line}", file=out)
    if not lines:
        print(
            f"kraft dev: nothing was running from {data} (no pid in its cluster.json is a live "
            f"kraft process)",
            file=out,
        )
    return 0


def restart_node(data: pathlib.Path, node_id: int, wait_timeout: float, out: TextIO) -> int:
    """`kraft dev --restart ID`: start one stopped node again from its server.properties, in its
    own session, and record its new pid in cluster.json (a running supervisor adopts it)."""
    doc = read_cluster_json(data)
    if doc is None:
        raise DevClusterError(
            f"{data} has no cluster.json; start a cluster with: "
            f"kraft dev --controllers 3 --brokers 3 --data {data}"
        )
    entry = next((n for n in doc.get("nodes", []) if n.get("id") == node_id), None)
    if entry is None:
        ids = ", ".join(str(n.get("id")) for n in doc.get("nodes", []))
        raise DevClusterError(f"node {node_id} is not part of the cluster in {data} (nodes {ids})")
    if is_kraft_process(entry.get("pid")):
        raise DevClusterError(
            f"node {node_id} is still running (pid {entry['pid']}); stop it first "
            f"(kill {entry['pid']})"
        )
    others = [t for t in targets_of({"nodes": doc.get("nodes", [])}) if t.alive()]
    if not others:
        raise DevClusterError(
            f"no node of the cluster in {data} is running; start it all with: "
            f"{start_command(doc, data)}"
        )
    plan = NodePlan(
        node_id, tuple(entry["roles"]), entry["address"], pathlib.Path(entry["data_dir"]), {}
    )
    node = _Launched(plan, *launch(plan.config_path, plan.log_path, detach=True))
    entry["pid"] = node.proc.pid
    write_cluster_json(data, doc)
    try:
        _wait_listening(
            [node], time.monotonic() + wait_timeout, wait_timeout, None, Progress(enabled=False)
        )
    except DevClusterError:
        stop_targets([Target(plan.label, node.proc.pid, node.proc)])
        raise
    print(f"kraft dev: restarted {plan.label} on {plan.address}, pid {node.proc.pid}", file=out)
    return 0


def run(
    args,
    format_node: Callable[[pathlib.Path, str], None],
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """kraft dev's multi-process modes: --controllers/--brokers, --stop, --restart and
    --rolling-restart."""
    out, err = out or sys.stdout, err or sys.stderr
    data = pathlib.Path(args.data).resolve()
    if getattr(args, "rolling_restart", False):
        given = [
            f
            for f, on in (
                ("--controllers", args.controllers is not None),
                ("--brokers", args.brokers is not None),
                ("--detach", args.detach),
                ("--stop", args.stop),
                ("--restart", args.restart is not None),
                ("--secure", getattr(args, "secure", False)),
            )
            if on
        ]
        if given:
            raise DevClusterError(
                f"--rolling-restart takes only --data and its options; drop {given[0]}"
            )
        from entry.dev_rolling import DEFAULT_TIMEOUT_S, rolling_restart

        return rolling_restart(
            data,
            DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout,
            include_controllers=args.include_controllers,
            output_format=args.format or "text",
            out=out,
            err=err,
        )
    if args.stop or args.restart is not None:
        flag = "--stop" if args.stop else "--restart"
        given = [
            f
            for f, on in (
                ("--controllers", args.controllers is not None),
                ("--brokers", args.brokers is not None),
                ("--detach", args.detach),
                ("--restart", args.stop and args.restart is not None),
            )
            if on
        ]
        if given:
            raise DevClusterError(f"{flag} takes only --data; drop {given[0]}")
        return (
            stop_cluster(data, out)
            if args.stop
            else restart_node(data, args.restart, args.wait_timeout, out)
        )
    secure = getattr(args, "secure", False)
    controllers = 1 if args.controllers is None else args.controllers
    brokers = 1 if args.brokers is None else args.brokers
    if args.port < 0 or args.controller_port < 0:
        raise DevClusterError(
            "--port and --controller-port take a port number, or 0 for free ports"
        )
    plans = plan_cluster(
        data,
        controllers,
        brokers,
        args.host,
        args.port,
        args.controller_port,
        args.override,
        pick_ports=reusing_ports(read_cluster_json(data)),
    )
    setup = None
    if secure:
        plans, setup = secure_plans(data, plans, args.host)
    if controllers % 2 == 0:
        print(
            f"kraft dev: warning: {controllers} controllers survive no more failures than "
            f"{controllers - 1} do (a majority is {controllers // 2 + 1}); an odd number is better",
            file=err,
        )
    return start_cluster(
        data,
        plans,
        detach=args.detach,
        wait_timeout=args.wait_timeout,
        format_node=format_node,
        out=out,
        err=err,
        secure=setup,
    )


def refuse_cluster_dir(data: pathlib.Path) -> None:
    """Plain `kraft dev` keeps its one node's log in --data itself, where a cluster keeps node-<id>/."""
    doc = read_cluster_json(pathlib.Path(data))
    roles = [tuple(n.get("roles", ())) for n in (doc or {}).get("nodes", [])]
    if any(r != ("broker", "controller") for r in roles):
        raise DevClusterError(
            f"{data} holds a cluster of {shape(doc)}; run it with: "
            f"{start_command(doc, data)}, or pick another --data"
        )
