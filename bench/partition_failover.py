"""Partition failover: ms from kill -9 of a partition's leader to the first write the new
leader acknowledges (acks=all, idempotent producer: an ack of an offset beyond the last acknowledged
before the kill), over N runs on a local `kraft dev` cluster (3 controllers, 3 brokers, RF=3,
min.insync.replicas=2), with kraft dev's settings unless told otherwise.
`python bench/partition_failover.py [--session-timeout-ms 1500] [--runs 20]`."""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from bench.dev_cluster import DevCluster, kraft  # noqa: E402
from clients.admin import Admin, NewTopic  # noqa: E402
from clients.cli.output import format_summary, print_json, print_table  # noqa: E402
from clients.producer import Producer  # noqa: E402
from clients.wire import broker_pb2, broker_pb2_grpc  # noqa: E402

TOPIC = "failover"
# Kafka's names. Leader rebalancing is off so that the controller never moves leadership back to
# a restarted broker between our look at the leader and the kill; a short replica lag lets the
# restarted broker rejoin the ISR sooner. Neither changes the failover measured.
FIXED = ["replica.lag.time.max.ms=3000", "auto.leader.rebalance.enable=false"]
STEADY_TIMEOUT_S = 60.0
# Answers the old leader sent just before it died still complete after the kill (seen: 1 ms after).
# No new leader can exist that soon (the controller waits broker.session.timeout.ms), so acks within
# this window count as before the kill.
STALE_MS = 100
# "fencing brokers [2]" (session ended) or "fencing broker 2: reported unreachable ..." (dead).
FENCE_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
    r".*fencing (?:brokers \[([\d, ]*)\]|broker (\d+): reported unreachable)"
)


def progress(message: str) -> None:
    print(f"partition_failover: {message}", file=sys.stderr, flush=True)


def partition_state(stub: broker_pb2_grpc.BrokerStub, timeout_s: float = 1.0):
    """The broker's Metadata view of partition 0 of TOPIC; None: no answer."""
    try:
        resp = stub.Metadata(broker_pb2.MetadataRequest(topics=[TOPIC]), timeout=timeout_s)
    except grpc.RpcError:
        return None
    parts = resp.topics[0].partitions if resp.topics else []
    return parts[0] if parts else None


class Stubs:
    """One open channel per broker address, so a poll does not pay for a connection."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.Channel] = {}

    def __getitem__(self, address: str) -> broker_pb2_grpc.BrokerStub:
        if address not in self._channels:
            self._channels[address] = grpc.insecure_channel(address)
        return broker_pb2_grpc.BrokerStub(self._channels[address])

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()


def wait_in_sync(cluster: DevCluster, stubs: Stubs, timeout_s: float = STEADY_TIMEOUT_S):
    """Until every broker names the same leader and the full ISR (3 replicas); returns that view."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        views = [partition_state(stubs[b["address"]]) for b in cluster.brokers().values()]
        last = [(v.leader, v.leader_epoch, list(v.isr)) if v else None for v in views]
        if (
            all(v is not None and v.leader >= 0 and len(v.isr) == 3 for v in views)
            and len({(v.leader, v.leader_epoch) for v in views}) == 1
        ):
            return views[0]
        time.sleep(0.1)
    raise RuntimeError(
        f"{TOPIC}-0 did not get a leader and a full ISR on every broker within "
        f"{timeout_s:g} s (last: {last!r})"
    )


class Writer:
    """Sends records continuously from a thread at about `rate`/s; each ack (or failure) is kept
    as (sent at, completed at, offset or None), monotonic seconds."""

    def __init__(
        self, bootstrap: str, rate: int, request_timeout_ms: int, retry_backoff_ms: int
    ) -> None:
        self.producer = Producer(
            bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=2,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            delivery_timeout_ms=60_000,
        )
        self.rate = rate
        self.acks: list[tuple[float, float, int]] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write, name="writer", daemon=True)

    def leader_known_to_client(self) -> int | None:
        """The partition leader in the producer's metadata cache (a peek for the timeline)."""
        return self.producer._async._cluster.metadata.leaders.get((TOPIC, 0))

    def start(self) -> None:
        self._thread.start()

    def _done(self, sent_at: float):
        def done(future) -> None:
            exc = future.exception()
            if exc is None:
                self.acks.append((sent_at, time.monotonic(), future.result().offset))
            else:
                self.failures.append(" ".join(str(exc).split()))

        return done

    def _write(self) -> None:
        i, start = 0, time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            self.producer.send(TOPIC, b"v%09d" % i).add_done_callback(self._done(now))
            i += 1
            pause = start + i / self.rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)

    def wait_acks(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while len(self.acks) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.acks) >= count

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.close(timeout=30)


class Tracer:
    """From the kill on, polls each surviving broker's Metadata and the producer's cache every
    `poll_ms`: when each first names a new leader (ms after the kill)."""

    def __init__(
        self, stubs: Stubs, survivors: dict[int, str], writer: Writer, victim: int, poll_ms: int
    ) -> None:
        self.stubs, self.survivors, self.writer, self.victim = stubs, survivors, writer, victim
        self.poll_s = poll_ms / 1000
        self.seen: dict[str, float] = {}  # "broker N" / "client" -> monotonic time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="tracer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _moved(self, leader: int | None) -> bool:
        return leader is not None and leader not in (-1, self.victim)

    def _poll(self) -> None:
        while not self._stop.is_set():
            if "client" not in self.seen and self._moved(self.writer.leader_known_to_client()):
                self.seen["client"] = time.monotonic()
            for node_id, address in self.survivors.items():
                key = f"broker {node_id}"
                if key not in self.seen:
                    state = partition_state(self.stubs[address], timeout_s=0.5)
                    if state is not None and self._moved(state.leader):
                        self.seen[key] = time.monotonic()
            self._stop.wait(self.poll_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def wait_dead(pid: int, timeout_s: float = 5.0) -> None:
    """Until the process is gone or a zombie: SIGKILL is delivered asynchronously."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.0005)
    raise RuntimeError(f"pid {pid} still runs {timeout_s:g} s after SIGKILL")


def fenced_at(cluster: DevCluster, offsets: dict[int, int], victim: int) -> float | None:
    """Wall time of the active controller's line fencing `victim` after `offsets`."""
    for node_id, c in cluster.controllers().items():
        with open(c["log"], "rb") as f:
            f.seek(offsets[node_id])
            for line in f.read().decode(errors="replace").splitlines():
                m = FENCE_LINE.match(line)
                named = m.group(2) if m and m.group(2) is not None else (m.group(3) if m else "")
                if m and str(victim) in named.replace(" ", "").split(","):
                    stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
                    return stamp.timestamp()
    return None


def one_run(cluster: DevCluster, stubs: Stubs, run: int, args: argparse.Namespace) -> dict:
    before = wait_in_sync(cluster, stubs)
    victim, brokers = before.leader, cluster.brokers()
    survivors = {i: b["address"] for i, b in brokers.items() if i != victim}
    writer = Writer(cluster.bootstrap, args.rate, args.request_timeout_ms, args.retry_backoff_ms)
    tracer = None
    try:
        writer.start()
        if not writer.wait_acks(200, 30):
            raise RuntimeError(
                f"run {run}: fewer than 200 acks within 30 s before the kill "
                f"(failures: {writer.failures[-3:]})"
            )
        log_offsets = {
            i: pathlib.Path(c["log"]).stat().st_size for i, c in cluster.controllers().items()
        }
        if args.poll_ms > 0:
            tracer = Tracer(stubs, survivors, writer, victim, args.poll_ms)
        acked_before = len(writer.acks)
        wall_kill, kill = time.time(), time.monotonic()
        os.kill(brokers[victim]["pid"], signal.SIGKILL)
        wait_dead(brokers[victim]["pid"])
        dead = time.monotonic()
        if tracer is not None:
            tracer.start()
        time.sleep(max(0.0, kill + STALE_MS / 1000 - time.monotonic()))
        seen = len(writer.acks)
        stale = seen - acked_before
        last_before = max((a[2] for a in writer.acks[:seen]), default=-1)
        first_beyond = first_new = None
        deadline = kill + args.give_up_s
        while time.monotonic() < deadline and (first_beyond is None or first_new is None):
            acks = writer.acks[seen:]
            seen += len(acks)
            for sent_at, acked_at, offset in acks:
                if first_beyond is None and offset > last_before:
                    first_beyond = (acked_at, offset)
                # Cross-check: sent after the old leader was dead, so only a new leader can have
                # acknowledged it.
                if first_new is None and sent_at > dead:
                    first_new = (acked_at, offset)
            time.sleep(0.005)
        writer.wait_acks(seen + 100, 10)  # a little steady writing on the new leader
    finally:
        if tracer is not None:
            tracer.stop()
        writer.close()
    after = partition_state(stubs[next(iter(survivors.values()))]) or before
    fenced_wall = fenced_at(cluster, log_offsets, victim)
    since = lambda t: None if t is None else round((t - kill) * 1000)  # noqa: E731
    seen_at = tracer.seen if tracer is not None else {}
    brokers_ms = [since(seen_at[f"broker {i}"]) for i in survivors if f"broker {i}" in seen_at]
    result = {
        "run": run,
        "ms": since(first_beyond and first_beyond[0]),
        "killed": victim,
        "old_epoch": before.leader_epoch,
        "new_leader": after.leader,
        "new_epoch": after.leader_epoch,
        "fenced_ms": None if fenced_wall is None else round((fenced_wall - wall_kill) * 1000),
        "brokers_ms": sorted(brokers_ms),
        "client_ms": since(seen_at.get("client")),
        "sent_after_kill_ms": since(first_new and first_new[0]),
        "stale_acks": stale,
        "last_offset_before": last_before,
        "first_offset_after": first_beyond and first_beyond[1],
        "failed_records": len(writer.failures),
    }
    if writer.failures:
        result["first_failure"] = writer.failures[0]
    progress(
        f"run {run}: killed broker {victim} (leader epoch {before.leader_epoch}); "
        + (
            f"first ack from broker {after.leader} (epoch {after.leader_epoch}) after "
            f"{result['ms']} ms [fenced {result['fenced_ms']}, brokers {result['brokers_ms']}, client "
            f"{result['client_ms']}]"
            if first_beyond
            else f"nothing acknowledged within {args.give_up_s:g} s ({writer.failures[-1:]})"
        )
    )
    restart = time.monotonic()
    kraft("dev", "--restart", str(victim), "--data", str(cluster.data))
    wait_in_sync(cluster, stubs)
    result["rejoin_ms"] = round((time.monotonic() - restart) * 1000)
    return result


def summarise(results: list[dict]) -> dict:
    times = [r["ms"] for r in results if r["ms"] is not None]

    def median(values: list) -> int | None:
        values = [v for v in values if v is not None]
        return round(statistics.median(values)) if values else None

    # Where the time goes: the median ms after the kill at which each step was first seen.
    timeline = {
        "fenced": median([r["fenced_ms"] for r in results]),
        "first_broker": median([min(r["brokers_ms"], default=None) for r in results]),
        "last_broker": median([max(r["brokers_ms"], default=None) for r in results]),
        "client": median([r["client_ms"] for r in results]),
        "ack": median(times),
    }
    return {
        "runs": len(results),
        "failed": len(results) - len(times),
        "median_ms": median(times),
        "max_ms": max(times) if times else None,
        "min_ms": min(times) if times else None,
        "timeline_median_ms": timeline,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=20, help="kills to measure (default 20)")
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        help="broker.session.timeout.ms (default: kraft dev's; Kafka's is 9000)",
    )
    p.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        help="broker.heartbeat.interval.ms (default: kraft dev's; Kafka's is 2000)",
    )
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more node settings, after the script's (repeatable)",
    )
    p.add_argument(
        "--rate", type=int, default=1000, help="records/s the producer sends (default 1000)"
    )
    p.add_argument(
        "--request-timeout-ms",
        type=int,
        default=500,
        help="the producer's request_timeout_ms (default 500)",
    )
    p.add_argument(
        "--retry-backoff-ms",
        type=int,
        default=50,
        help="the producer's retry_backoff_ms (default 50)",
    )
    p.add_argument(
        "--poll-ms",
        type=int,
        default=25,
        help="how often to poll the survivors' and the producer's view of the leader "
        "for the timeline (default 25; 0: no timeline)",
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

    overrides = FIXED + [
        f"{key}={value}"
        for key, value in (
            ("broker.session.timeout.ms", args.session_timeout_ms),
            ("broker.heartbeat.interval.ms", args.heartbeat_interval_ms),
        )
        if value is not None
    ]
    overrides += args.override
    data = pathlib.Path(args.data or tempfile.mkdtemp(prefix="kraft-pfailover-")).resolve()
    cluster, stubs = DevCluster(data), Stubs()
    results: list[dict] = []
    progress(f"starting 3 controllers + 3 brokers in {data} ({', '.join(overrides)})")
    try:
        start = [
            "dev",
            "--controllers",
            "3",
            "--brokers",
            "3",
            "--port",
            "0",
            "--detach",
            "--data",
            str(data),
        ]
        for o in overrides:
            start += ["--override", o]
        kraft(*start)
        with Admin(cluster.bootstrap, request_timeout_ms=10_000) as admin:
            admin.create_topics(
                [
                    NewTopic(
                        TOPIC,
                        num_partitions=1,
                        replication_factor=3,
                        configs={"min.insync.replicas": "2"},
                    )
                ]
            )
        for run in range(1, args.runs + 1):
            results.append(one_run(cluster, stubs, run, args))
    finally:
        stubs.close()
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
        "overrides": overrides,
        "rate": args.rate,
        "request_timeout_ms": args.request_timeout_ms,
        "retry_backoff_ms": args.retry_backoff_ms,
        **summarise(results),
        "results": results,
    }
    if args.format == "json":
        print_json(summary)
        return 0
    print_table(
        (
            "RUN",
            "MS",
            "KILLED",
            "NEW_LEADER",
            "NEW_EPOCH",
            "FENCED_MS",
            "BROKERS_MS",
            "CLIENT_MS",
            "FAILED",
            "REJOIN_MS",
        ),
        [
            (
                r["run"],
                r["ms"],
                r["killed"],
                r["new_leader"],
                r["new_epoch"],
                r["fenced_ms"],
                "/".join(map(str, r["brokers_ms"])) or None,
                r["client_ms"],
                r["failed_records"],
                r["rejoin_ms"],
            )
            for r in results
        ],
    )
    print()
    producer = (
        f"acks=all, idempotent, {args.rate} records/s, request_timeout_ms="
        f"{args.request_timeout_ms}, retry_backoff_ms={args.retry_backoff_ms}"
    )
    timeline = ", ".join(f"{k} {v}" for k, v in summary["timeline_median_ms"].items())
    print(
        format_summary(
            [
                ("Settings", ", ".join(overrides)),
                ("Producer", producer),
                ("MedianMs", summary["median_ms"]),
                ("MaxMs", summary["max_ms"]),
                ("TimelineMedianMs", timeline),
                ("Failed", summary["failed"]),
            ]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
