"""Controller failover: the time from kill -9 of the active controller to the first
CreateTopics a broker acknowledges, over N runs of a local `kraft dev` cluster (3 controllers, 3
brokers). `python bench/controller_failover.py [--preset tuned|defaults|fast] [--runs 20]`."""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from bench import dev_cluster  # noqa: E402
from bench.dev_cluster import kraft  # noqa: E402
from clients.admin import Admin, NewTopic  # noqa: E402
from clients.cli.common import CliError  # noqa: E402
from clients.cli.output import format_summary, print_json, print_table  # noqa: E402
from clients.cli.quorum import describe_quorum, quorum_json  # noqa: E402
from clients.errors import KraftError  # noqa: E402

# Kafka's names. "defaults" is Kafka's own (fetch 2000, election 1000, request 2000).
PRESETS: dict[str, list[str]] = {
    "defaults": [],
    "tuned": [
        "controller.quorum.fetch.timeout.ms=1000",
        "controller.quorum.election.timeout.ms=300",
        "controller.quorum.request.timeout.ms=1000",
    ],
    "fast": [
        "controller.quorum.fetch.timeout.ms=500",
        "controller.quorum.election.timeout.ms=150",
        "controller.quorum.request.timeout.ms=500",
    ],
}
STEADY_TIMEOUT_S = 60.0


def progress(message: str) -> None:
    print(f"controller_failover: {message}", file=sys.stderr, flush=True)


class DevCluster(dev_cluster.DevCluster):
    def quorum(self, timeout_s: float = 1.0) -> dict | None:
        """`kraft quorum describe --format json` of the controllers, in-process; None: no answer."""
        addresses = [c["address"] for c in self.controllers().values()]
        try:
            return quorum_json(trio.run(describe_quorum, addresses, timeout_s))
        except CliError:
            return None


def wait_steady(
    cluster: DevCluster, admin: Admin, run: int, timeout_s: float = STEADY_TIMEOUT_S
) -> dict:
    """Until the leader sees every voter with lag 0 and a CreateTopics through the broker succeeds
    (so the broker knows the active controller); returns the leader's quorum view."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        q = cluster.quorum()
        if (
            q
            and q["role"] == "Leader"
            and len(q["voters"]) == len(cluster.controllers())
            and all(v["lag"] == 0 and v["log_end_offset"] >= 0 for v in q["voters"])
        ):
            try:
                admin.create_topics([NewTopic(f"warm-{run}-{time.monotonic_ns()}", 1, 1)])
                q2 = cluster.quorum()
                if q2 and q2["role"] == "Leader" and q2["leader_id"] == q["leader_id"]:
                    return q2
            except KraftError as exc:
                q = f"warm-up CreateTopics failed: {exc}"
        last = q
        time.sleep(0.2)
    raise RuntimeError(f"the quorum did not settle within {timeout_s:g} s (last: {last!r})")


def one_run(cluster: DevCluster, run: int, attempt_timeout_ms: int, give_up_s: float) -> dict:
    with Admin(cluster.bootstrap, request_timeout_ms=10_000) as admin:
        before = wait_steady(cluster, admin, run)
    victim = before["leader_id"]
    pid = cluster.controllers()[victim]["pid"]
    attempts, acked_ms, problem = 0, None, None
    with Admin(cluster.bootstrap, request_timeout_ms=attempt_timeout_ms) as admin:
        start = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        while time.monotonic() - start < give_up_s:
            attempts += 1
            try:
                admin.create_topics(
                    [NewTopic(f"failover-{run}-{attempts}-{time.monotonic_ns()}", 1, 1)]
                )
            except KraftError as exc:
                problem = str(exc)
                continue
            acked_ms = (time.monotonic() - start) * 1000
            break
    after = cluster.quorum() or {}
    result = {
        "run": run,
        "ms": None if acked_ms is None else round(acked_ms),
        "attempts": attempts,
        "killed": victim,
        "old_epoch": before["leader_epoch"],
        "new_leader": after.get("leader_id"),
        "new_epoch": after.get("leader_epoch"),
    }
    if acked_ms is None:
        result["last_error"] = problem
    progress(
        f"run {run}: killed controller {victim} (epoch {before['leader_epoch']}); "
        + (
            f"first CreateTopics acknowledged after {acked_ms:.0f} ms ({attempts} attempts), "
            f"leader now {after.get('leader_id')} (epoch {after.get('leader_epoch')})"
            if acked_ms is not None
            else f"nothing acknowledged within {give_up_s:g} s: {problem}"
        )
    )
    kraft("dev", "--restart", str(victim), "--data", str(cluster.data))
    return result


def summarise(results: list[dict]) -> dict:
    times = [r["ms"] for r in results if r["ms"] is not None]
    return {
        "runs": len(results),
        "failed": len(results) - len(times),
        "median_ms": round(statistics.median(times)) if times else None,
        "max_ms": max(times) if times else None,
        "min_ms": min(times) if times else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=20, help="kills to measure (default 20)")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="tuned",
        help="controller.quorum.* settings (defaults: Kafka's; default: tuned)",
    )
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more node settings, after the preset's (repeatable)",
    )
    p.add_argument(
        "--brokers", type=int, default=3, help="brokers (default 3; 1 before 2026-11-25)"
    )
    p.add_argument(
        "--attempt-timeout-ms",
        type=int,
        default=500,
        help="request timeout of each CreateTopics attempt (default 500)",
    )
    p.add_argument(
        "--give-up-s",
        type=float,
        default=30.0,
        help="a run with nothing acknowledged this long after the kill fails (default 30)",
    )
    p.add_argument("--data", help="cluster directory (default: a temporary one, removed after)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    args = p.parse_args(argv)

    overrides = PRESETS[args.preset] + args.override
    data = pathlib.Path(args.data or tempfile.mkdtemp(prefix="kraft-failover-")).resolve()
    cluster = DevCluster(data)
    results: list[dict] = []
    progress(
        f"starting 3 controllers + {args.brokers} broker(s) in {data} "
        f"({', '.join(overrides) or 'Kafka defaults'})"
    )
    try:
        start = [
            "dev",
            "--controllers",
            "3",
            "--brokers",
            str(args.brokers),
            "--port",
            "0",
            "--detach",
            "--data",
            str(data),
        ]
        for o in overrides:
            start += ["--override", o]
        kraft(*start)
        for run in range(1, args.runs + 1):
            results.append(one_run(cluster, run, args.attempt_timeout_ms, args.give_up_s))
    finally:
        if (data / "cluster.json").exists():
            subprocess.run(
                [sys.executable, "-m", "entry.main", "dev", "--stop", "--data", str(data)],
                cwd=ROOT,
                capture_output=True,
                timeout=120,
            )
            progress("cluster stopped")
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)

    summary = {
        "preset": args.preset,
        "overrides": overrides,
        "brokers": args.brokers,
        "attempt_timeout_ms": args.attempt_timeout_ms,
        **summarise(results),
        "results": results,
    }
    if args.format == "json":
        print_json(summary)
        return 0
    print_table(
        ("RUN", "MS", "ATTEMPTS", "KILLED", "NEW_LEADER", "NEW_EPOCH"),
        [
            (r["run"], r["ms"], r["attempts"], r["killed"], r["new_leader"], r["new_epoch"])
            for r in results
        ],
    )
    print()
    print(
        format_summary(
            [
                ("Settings", ", ".join(overrides) or "Kafka defaults"),
                ("AttemptTimeoutMs", args.attempt_timeout_ms),
                ("MedianMs", summary["median_ms"]),
                ("MaxMs", summary["max_ms"]),
                ("Failed", summary["failed"]),
            ]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
