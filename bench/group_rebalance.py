"""Consumer groups: how long a group of 3 takes to rebalance when a member joins and when
one is killed -9 (ms until every member has run on_partitions_assigned with the final 2/2/2 or 3/3
split), and consumer throughput of a group of 3 against one consumer; on a local `kraft dev`
cluster (1 controller, 3 brokers), every member its own process.
`python bench/group_rebalance.py [--runs 5] [--session-timeout-ms 6000] [--records 300000]`."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.dev_cluster import DevCluster, kraft  # noqa: E402
from clients.admin import Admin, NewTopic  # noqa: E402
from clients.cli.output import format_summary, print_json, print_table  # noqa: E402
from clients.producer import Producer  # noqa: E402

TOPIC = "grouped"
PARTITIONS = 6
# Kafka's group.initial.rebalance.delay.ms default (3 s): members started together join the first
# generation together. A join into a non-empty group does not wait for it.
FIXED = [
    "group.initial.rebalance.delay.ms=3000",
    "group.min.session.timeout.ms=1000",
    "offsets.topic.num.partitions=3",
    "offsets.topic.replication.factor=3",
]

MEMBER = r"""
import json, sys, time
from clients.consumer import Consumer, ConsumerRebalanceListener
bootstrap, group, topic, session_ms, heartbeat_ms = sys.argv[1:6]
def emit(**kw):
    print(json.dumps({**kw, "t": time.time()}), flush=True)
class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, partitions):
        emit(event="revoked")
    def on_partitions_assigned(self, partitions):
        emit(event="assigned", partitions=sorted(p for _, p in partitions))
with Consumer(bootstrap, group_id=group, session_timeout_ms=int(session_ms),
              heartbeat_interval_ms=int(heartbeat_ms), auto_offset_reset="earliest",
              max_poll_records=2000, enable_auto_commit=True) as c:
    emit(event="subscribed")
    c.subscribe([topic], listener=Listener())
    n, reported, last = 0, 0.0, 0.0
    while True:
        records = c.poll(timeout_ms=100)
        now = time.time()
        if records:
            if n == 0:
                emit(event="first")
            n, last = n + len(records), now
            if now - reported > 0.05:
                emit(event="count", n=n, at=last)
                reported = now
        elif n and reported < last:
            emit(event="count", n=n, at=last)     # the final count, timed at its last records
            reported = now
"""


def progress(message: str) -> None:
    print(f"group_rebalance: {message}", file=sys.stderr, flush=True)


class Member:
    """One consumer process; its events (JSON lines with wall times) land in `events`."""

    def __init__(self, bootstrap: str, group: str, session_ms: int, heartbeat_ms: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                MEMBER,
                bootstrap,
                group,
                TOPIC,
                str(session_ms),
                str(heartbeat_ms),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.events: queue.Queue = queue.Queue()
        self.log: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.put(json.loads(line))

    def drain(self) -> list[dict]:
        while True:
            try:
                self.log.append(self.events.get_nowait())
            except queue.Empty:
                return self.log

    def assigned_since(self, t: float) -> tuple[float, list[int]] | None:
        """(time, partitions) of the last assignment at or after `t`."""
        found = [e for e in self.drain() if e["event"] == "assigned" and e["t"] >= t]
        return (found[-1]["t"], found[-1]["partitions"]) if found else None

    def first_event(self, name: str) -> dict | None:
        return next((e for e in self.drain() if e["event"] == name), None)

    def count(self) -> tuple[int, float]:
        counts = [e for e in self.drain() if e["event"] == "count"]
        return (counts[-1]["n"], counts[-1]["at"]) if counts else (0, 0.0)

    def kill(self) -> float:
        self.proc.kill()
        t = time.time()
        self.proc.wait(10)
        return t

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def wait_split(members: list[Member], since: float, sizes: list[int], timeout_s: float) -> float:
    """Until each member's last assignment since `since` gives the split `sizes` covering every
    partition; returns the latest of those assignment times."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = [m.assigned_since(since) for m in members]
        if all(got):
            parts = [p for _, ps in got for p in ps]
            if sorted(len(ps) for _, ps in got) == sizes and sorted(parts) == list(
                range(PARTITIONS)
            ):
                return max(t for t, _ in got)
        time.sleep(0.01)
    raise RuntimeError(
        f"no {sizes} split within {timeout_s:g} s: {[m.assigned_since(since) for m in members]}"
    )


def rebalances(bootstrap: str, args: argparse.Namespace) -> list[dict]:
    """Two members settle; each run a third joins (timed), then is killed -9 (timed)."""
    members = [
        Member(bootstrap, "rebalance", args.session_timeout_ms, args.heartbeat_interval_ms)
        for _ in range(2)
    ]
    results = []
    try:
        wait_split(members, 0, [3, 3], 60)
        for run in range(1, args.runs + 1):
            joiner = Member(
                bootstrap, "rebalance", args.session_timeout_ms, args.heartbeat_interval_ms
            )
            deadline = time.monotonic() + 30
            while joiner.first_event("subscribed") is None and time.monotonic() < deadline:
                time.sleep(0.01)
            subscribed = joiner.first_event("subscribed")["t"]
            joined = wait_split(members + [joiner], subscribed, [2, 2, 2], 60)
            time.sleep(1)  # steady before the kill
            killed = joiner.kill()
            moved = wait_split(members, killed, [3, 3], 60)
            result = {
                "run": run,
                "join_ms": round((joined - subscribed) * 1000),
                "kill_ms": round((moved - killed) * 1000),
            }
            progress(f"run {run}: join {result['join_ms']} ms, kill -9 {result['kill_ms']} ms")
            results.append(result)
    finally:
        for m in members:
            m.stop()
    return results


def throughput(
    bootstrap: str, group: str, consumers: int, records: int, args: argparse.Namespace
) -> dict:
    members = [
        Member(bootstrap, group, args.session_timeout_ms, args.heartbeat_interval_ms)
        for _ in range(consumers)
    ]
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            counts = [m.count() for m in members]
            if sum(n for n, _ in counts) >= records:
                break
            time.sleep(0.02)
        else:
            raise RuntimeError(f"{group}: {sum(n for n, _ in counts)} of {records} in 300 s")
        firsts = [m.first_event("first") for m in members]
        start = min(e["t"] for e in firsts if e)
        end = max(t for _, t in counts)
        seconds = end - start
        split = sorted(n for n, _ in counts)
    finally:
        for m in members:
            m.stop()
    return {
        "consumers": consumers,
        "records": records,
        "seconds": round(seconds, 2),
        "records_per_sec": round(records / seconds),
        "per_member": split,
    }


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=5, help="joins and kills to time (default 5)")
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="the members' session_timeout_ms (default 6000, Kafka's "
        "group.min.session.timeout.ms; Kafka's client default is 45000)",
    )
    p.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=1000,
        help="the members' heartbeat_interval_ms (default 1000)",
    )
    p.add_argument(
        "--records",
        type=int,
        default=300_000,
        help="records for the throughput runs (default 300000 of 100 bytes)",
    )
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--data", help="cluster directory (default: a temporary one, removed after)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    args = p.parse_args(argv)

    data = pathlib.Path(args.data or tempfile.mkdtemp(prefix="kraft-groups-")).resolve()
    cluster = DevCluster(data)
    progress(
        f"starting 1 controller + 3 brokers in {data} ({', '.join(FIXED)}); load {load_average()}"
    )
    out: dict = {
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": args.heartbeat_interval_ms,
        "load_before": load_average(),
    }
    try:
        start = [
            "dev",
            "--controllers",
            "1",
            "--brokers",
            "3",
            "--port",
            "0",
            "--detach",
            "--data",
            str(data),
        ]
        for o in FIXED:
            start += ["--override", o]
        kraft(*start)
        bootstrap = cluster.bootstrap
        with Admin(bootstrap, request_timeout_ms=10_000) as admin:
            admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])
        runs = rebalances(bootstrap, args)
        out["runs"] = runs
        out["join_median_ms"] = round(statistics.median(r["join_ms"] for r in runs))
        out["kill_median_ms"] = round(statistics.median(r["kill_ms"] for r in runs))
        if not args.skip_throughput:
            progress(f"producing {args.records} records")
            with Producer(bootstrap, acks=1, linger_ms=5, batch_size=262144) as producer:
                value = b"x" * 100
                for i in range(args.records):
                    producer.send(TOPIC, value, partition=i % PARTITIONS)
                producer.flush(timeout=120)
            out["one_consumer"] = throughput(bootstrap, "solo", 1, args.records, args)
            progress(f"one consumer: {out['one_consumer']}")
            out["group_of_3"] = throughput(bootstrap, "trio", 3, args.records, args)
            progress(f"group of 3: {out['group_of_3']}")
        out["load_after"] = load_average()
    finally:
        try:
            kraft("dev", "--stop", "--data", str(data))
        except Exception as exc:  # a stop that fails must not hide the results
            progress(f"stopping the cluster failed: {exc}")
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)
    if args.format == "json":
        print_json(out)
        return 0
    print(
        format_summary(
            [
                ("SESSION-TIMEOUT-MS", args.session_timeout_ms),
                ("JOIN-MEDIAN-MS", out["join_median_ms"]),
                ("KILL-MEDIAN-MS", out["kill_median_ms"]),
                ("LOAD", f"{out['load_before']} -> {out['load_after']}"),
            ]
        )
    )
    print_table(
        ["RUN", "JOIN-MS", "KILL-MS"], [(r["run"], r["join_ms"], r["kill_ms"]) for r in out["runs"]]
    )
    for key in ("one_consumer", "group_of_3"):
        if key in out:
            t = out[key]
            print(
                f"{key}: {t['records']} records in {t['seconds']} s = "
                f"{t['records_per_sec']} records/s (per member {t['per_member']})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
