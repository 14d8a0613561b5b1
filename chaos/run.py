"""`chaos/run.sh` (python -m chaos.run): a cluster in network namespaces (or the compose cluster,
--docker), the workload, the nemesis schedule, heal, a quiet period, the final drain, then the
audit; everything lands in --out. The command line is in run_args.py, the checks at the end
in run_checks.py."""

from __future__ import annotations

import argparse
import fcntl
import logging
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time
import uuid

from chaos import docker_cluster, netns
from chaos.cluster import ClusterError, LocalCluster, NodeSet, plan
from chaos.history import JsonLinesWriter
from chaos.nemeses.injectors import DOCKER_NEMESES, Extras, NemesisSetupError
from chaos.nemesis import ClusterView, Executor
from chaos.nemesis import plan as nemesis_plan
from chaos.run_args import build_parser, duration, nemesis_list  # noqa: F401  (tests' names)
from chaos.run_checks import audit, finish, quick_check  # noqa: F401
from chaos.secure import SecureFiles, SecureSetupError
from chaos.txn_workload import IN_TOPIC, OUT_TOPIC, TxnRecorder, TxnWorkload, drain_transactional
from chaos.workload import Recorder, Workload, drain

TOPIC = "chaos"
LOCK_PATH = "/run/kraft-chaos.lock"  # one run per machine: the namespaces' names are fixed


class RunError(Exception):
    """The run could not be set up or carried out (exit 2); the message says why."""


class Run:
    def __init__(self, args: argparse.Namespace, out: pathlib.Path) -> None:
        self.args, self.out = args, out
        self.nodes_dir = out / "nodes"
        self._log = open(out / "nemesis.log", "a", encoding="utf-8")
        self.t0 = time.monotonic_ns()
        self.extras: Extras | None = None  # the nemeses beyond kill, pause and partition

    def log(self, line: str) -> None:
        print(f"chaos: {line}", file=sys.stderr, flush=True)
        # Wall time as the nodes' logs print it, so a fault lines up with what the nodes said.
        now = time.time()
        self._log.write(
            f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now % 1 * 1000):03d} {line}\n"
        )
        self._log.flush()

    def clock_ns(self) -> int:
        return time.monotonic_ns() - self.t0

    def view(self, cluster: NodeSet) -> ClusterView:
        return ClusterView(
            tuple(cluster.controllers),
            tuple(cluster.brokers),
            cluster.active_controller(),
            cluster.leaders(TOPIC),
        )

    def execute(self) -> dict:
        a = self.args
        periods, faults = nemesis_plan(a.seed, a.duration, a.interval, a.nemesis)
        self.log(f"seed {a.seed}: {len(faults)} faults planned over {a.duration:g}s")
        for period in periods:
            self.log(
                f"  period {period.start_s:.1f}s-{period.end_s:.1f}s: "
                f"{', '.join(period.enabled) or 'no faults'}"
            )
        for f in faults:
            self.log(f"  plan {f.describe()}")
        cluster, network = self._cluster()
        try:
            for line in network.setup() or []:
                self.log(f"removed {line}")
            if self.extras:
                self.extras.setup()
            if a.docker:
                self.log(
                    f"docker: compose project {cluster.project}, image {cluster.image}, nodes "
                    f"at {cluster.subnet}.1<id> (settings in {cluster.override_path.name})"
                )
            else:
                self.log(f"network: bridge {netns.BRIDGE}, nodes at {netns.SUBNET}.<id>")
            cluster.format(f"chaos-{uuid.uuid4().hex[:12]}")
            for i in cluster.nodes:
                cluster.start(i)
            cluster.wait_ready(180 if a.docker else 90)  # containers start slower
            if cluster.secure is not None:
                cluster.secure.add_admin(
                    cluster.check_address(cluster.brokers[0]), cluster.bootstrap.split(","), 60
                )
                self.log(
                    "secure: user admin signs in over SASL_SSL; settings in "
                    f"{cluster.secure.dir / 'client.properties'}"
                )
            self.log(
                f"cluster ready: controllers {cluster.controllers}, brokers at {cluster.bootstrap}"
            )
            for topic in [TOPIC] + ([IN_TOPIC, OUT_TOPIC] if a.transactional else []):
                create_topic(cluster.bootstrap, a.partitions, 60, cluster.client_security, topic)
            return self._workload_phase(cluster, network, faults)
        finally:
            try:
                for line in cluster.stop_all():
                    self.log(line)
            finally:
                try:
                    for line in self.extras.teardown() if self.extras else []:
                        self.log(f"removed {line}")
                finally:
                    for line in network.teardown() or []:
                        self.log(f"removed {line}")

    def _cluster(self):
        if self.args.docker:
            cluster = docker_cluster.DockerCluster(
                self.nodes_dir, self.out / "docker-compose.chaos.json", self.args.image
            )
            return cluster, docker_cluster.DockerNetwork(cluster)
        nodes = plan(self.nodes_dir)
        secure = (
            SecureFiles.create(self.out / "secure", {n.id: n.host for n in nodes})
            if self.args.secure
            else None
        )
        cluster = LocalCluster(nodes, secure=secure)
        if set(self.args.nemesis) - set(DOCKER_NEMESES):
            self.extras = Extras(self.out, cluster, self.args.nemesis)
            problem = self.extras.problem()
            if problem:
                raise RunError(f"--nemesis {','.join(self.args.nemesis)}: {problem}")
            cluster.command_prefix = self.extras.prefix
        return cluster, netns.Network(cluster.nodes)

    def _workload_phase(self, cluster, network, faults) -> dict:
        a = self.args
        history = JsonLinesWriter(self.out / "history.jsonl")
        fault_log = JsonLinesWriter(self.out / "faults.jsonl")
        self.t0 = time.monotonic_ns()  # the history's and the faults' clock starts here
        rec = Recorder(history, self.clock_ns)
        _log_clients_to(self.out / "workload.log")
        stop = threading.Event()
        work = Workload(
            rec,
            cluster.bootstrap,
            TOPIC,
            a.partitions,
            stop,
            a.recreate,
            a.rate,
            a.producers,
            slots=a.slots,
            consumers=a.consumers,
            group_members=a.group_members,
            seed=a.seed,
            security=cluster.client_security,
            batch_size=a.batch_size,
        )
        executor = Executor(
            cluster,
            network,
            lambda: self.view(cluster),
            self.clock_ns,
            fault_log.write,
            self.log,
            a.seed,
            self.extras.injectors if self.extras else None,
        )
        txn_history = JsonLinesWriter(self.out / "txn_history.jsonl") if a.transactional else None
        txn_work = (
            TxnWorkload(
                TxnRecorder(txn_history, self.clock_ns),
                cluster.bootstrap,
                a.partitions,
                stop,
                processors=a.transactional,
                seed=a.seed,
                recreate_s=2 * a.recreate,
                security=cluster.client_security,
            )
            if a.transactional
            else None
        )
        work.start()
        if txn_work:
            txn_work.start()
        try:
            executor.run(faults)
            while self.clock_ns() < a.duration * 1e9:
                time.sleep(0.1)
        finally:
            executor.end()  # a fault still open (Ctrl-C mid-window) is healed and logged
            heal_ns = self.clock_ns()
            network.heal()
            for i in self.extras.heal_all() if self.extras else []:
                cluster.kill(i)  # its log dir went offline on a full disk
                self.log(f"heal: node {i} took its log dir offline; restarting it")
            for i in cluster.nodes:
                if not cluster.alive(i):
                    cluster.start(i, "restart at heal of")
                    self.log(f"heal: restarted node {i}")
                cluster.resume(i)
            self.log(f"{heal_ns / 1e9:7.2f}s heal: network healed, every node running")
            try:
                time.sleep(a.quiet)
            finally:
                stop.set()
                work.join(60)
                if txn_work:
                    txn_work.join(60)
        self.log(f"{self.clock_ns() / 1e9:7.2f}s workload stopped; draining")
        result = drain(
            rec, cluster.bootstrap, TOPIC, a.partitions, a.drain_timeout, cluster.client_security
        )
        self.log(
            f"{self.clock_ns() / 1e9:7.2f}s drain {'complete' if result.complete else 'INCOMPLETE'}"
            f": {result.records} records, ends {result.ends} {result.note}"
        )
        txn_summary = {}
        if txn_work:
            missing = drain_transactional(
                txn_work.recorder,
                cluster.bootstrap,
                a.partitions,
                a.drain_timeout,
                cluster.client_security,
            )
            self.log(
                f"{self.clock_ns() / 1e9:7.2f}s transactional drain "
                f"{'complete' if not missing else 'INCOMPLETE: ' + missing}"
            )
            txn_history.close()
            txn_summary = {
                "transactional": {
                    "ops": dict(sorted(txn_work.recorder.counts.items())),
                    "drain": missing or "complete",
                    "errors": txn_work.errors[:20],
                }
            }
        history.close()
        fault_log.close()
        ok_after_heal = rec.last_ok_send_ns is not None and rec.last_ok_send_ns > heal_ns
        return {
            "seed": a.seed,
            "duration_s": a.duration,
            "nemesis": a.nemesis,
            "cluster": (
                {"docker": {"project": cluster.project, "image": cluster.image}}
                if a.docker
                else "netns+secure"
                if a.secure
                else "netns"
            ),
            "ops": {f"{f}:{t}": n for (f, t), n in sorted(rec.counts.items())},
            "faults": [w.to_json() for w in executor.windows],
            "drain": {
                "complete": result.complete,
                "records": result.records,
                "ends": result.ends,
                "note": result.note,
            },
            "ok_send_after_heal": ok_after_heal,
            "workload_errors": work.errors[:20],
            **txn_summary,
        }


def create_topic(
    bootstrap: str,
    partitions: int,
    timeout: float,
    security: dict | None = None,
    topic: str = TOPIC,
) -> None:
    """RF=3, min.insync.replicas=2; waits until every partition has a leader and a full ISR."""
    from clients.admin import Admin, NewTopic
    from clients.errors import KraftError

    deadline = time.monotonic() + timeout
    created, last = False, ""
    while time.monotonic() < deadline:
        try:
            with Admin(bootstrap, request_timeout_ms=5000, **(security or {})) as admin:
                if not created:
                    admin.create_topics(
                        [NewTopic(topic, partitions, 3, {"min.insync.replicas": "2"})]
                    )
                    created = True
                (desc,) = admin.describe_topics([topic])
                if all(p.leader >= 0 and len(p.isr) == 3 for p in desc.partitions):
                    return
                last = f"partitions {[(p.partition, p.leader, p.isr) for p in desc.partitions]}"
        except KraftError as exc:
            last = str(exc)
        time.sleep(0.5)
    raise RunError(f"topic '{topic}' did not get a leader and a full ISR in {timeout:g} s ({last})")


def _prepare_out(out: pathlib.Path | None) -> pathlib.Path:
    out = (out or pathlib.Path("chaos-out") / time.strftime("%Y%m%d-%H%M%S")).resolve()
    if out.exists() and any(out.iterdir()):
        raise RunError(
            f"--out {out} is not empty; give a new directory (a run never mixes with "
            f"an earlier one's files)"
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(2**31)
    if args.docker and set(args.nemesis) - set(DOCKER_NEMESES):
        print(
            f"chaos: --docker runs only the nemeses {', '.join(DOCKER_NEMESES)}; only the "
            f"netns cluster runs {', '.join(n for n in args.nemesis if n not in DOCKER_NEMESES)}"
            " (leave out --docker)",
            file=sys.stderr,
        )
        return 2
    if args.docker and args.secure:
        print(
            "chaos: --secure runs the netns cluster; leave out --docker (the secure compose "
            "cluster is docker-compose.secure.yml)",
            file=sys.stderr,
        )
        return 2
    reason = (
        docker_cluster.unavailable_reason(args.image) if args.docker else netns.unavailable_reason()
    )
    if reason:
        print(f"chaos: cannot run: {reason}", file=sys.stderr)
        return 2
    # SIGTERM ends the run like Ctrl-C: the finally blocks stop the nodes and remove the network.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        out = _prepare_out(args.out)
        lock_path = docker_cluster.LOCK_PATH if args.docker else LOCK_PATH
        with open(lock_path, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunError(
                    f"another chaos run holds {lock_path}; wait for it to finish"
                ) from None
            run = Run(args, out)
            summary = run.execute()
    except (
        RunError,
        ClusterError,
        SecureSetupError,
        netns.NetnsError,
        NemesisSetupError,
        subprocess.TimeoutExpired,
    ) as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "chaos: interrupted; the nodes were stopped and the network (or compose project) "
            "removed",
            file=sys.stderr,
        )
        return 130
    return finish(run, summary, args)


def _log_clients_to(path: pathlib.Path) -> None:
    """The workload's clients log what they decided (coordinator lookups, committed offsets
    found, position resets) at INFO: kept in OUT/workload.log to explain the history."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s: %(message)s"))
    clients_log = logging.getLogger("clients")
    clients_log.addHandler(handler)
    clients_log.setLevel(logging.INFO)


if __name__ == "__main__":
    sys.exit(main())
