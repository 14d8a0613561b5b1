"""Produce latency during `kraft dev --rolling-restart` against steady state: a local cluster (3
controllers, 3 brokers), an RF=3 min.insync.replicas=2 topic, one producer (acks=all, retries)
sending at a fixed rate; each record's send-to-acknowledgement time, first for --steady-s
seconds with nothing happening, then for the whole rolling restart of the brokers.

    python bench/rolling_restart.py [--rate 500] [--steady-s 20] [--partitions 3] [--format json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.dev_cluster import DevCluster, kraft  # noqa: E402
from chaos import launcher  # noqa: E402
from clients.cli.output import print_json  # noqa: E402
from clients.producer import Producer  # noqa: E402

TOPIC = "rolling-bench"


def progress(message: str) -> None:
    print(f"rolling_restart: {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class Sender:
    """Sends at `rate` records/s on a thread; each acknowledgement's latency lands in the phase
    (steady or rolling) the record was sent in."""

    def __init__(self, bootstrap: str, rate: int, partitions: int) -> None:
        self.producer = Producer(bootstrap, acks="all", linger_ms=1, request_timeout_ms=5000)
        self.rate, self.partitions = rate, partitions
        self.phase = "warmup"
        self.latencies: dict[str, list[float]] = {"warmup": [], "steady": [], "rolling": []}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        interval, i, next_at = 1 / self.rate, 0, time.perf_counter()
        while not self._stop.is_set():
            phase, sent_at = self.phase, time.perf_counter()
            future = self.producer.send(TOPIC, b"x" * 100, partition=i % self.partitions)

            def done(f, phase=phase, sent_at=sent_at) -> None:
                if f.exception() is not None:
                    self.errors.append(repr(f.exception()))
                else:
                    self.latencies[phase].append((time.perf_counter() - sent_at) * 1000)

            future.add_done_callback(done)
            i += 1
            next_at += interval
            time.sleep(max(0.0, next_at - time.perf_counter()))

    def start(self) -> Sender:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.close(timeout=60)


def summary(values: list[float]) -> dict:
    return {
        "records": len(values),
        "p50_ms": round(percentile(values, 0.50), 2),
        "p99_ms": round(percentile(values, 0.99), 2),
        "max_ms": round(max(values), 2) if values else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=500, help="records/s (default 500)")
    parser.add_argument("--steady-s", type=float, default=20.0)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="per broker")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()
    data = pathlib.Path(tempfile.mkdtemp(prefix="rolling-bench-"))
    try:
        progress(f"starting 3 controllers, 3 brokers in {data}")
        kraft(
            *("dev", "--controllers", "3", "--brokers", "3", "--port", "0"),
            *("--controller-port", "0", "--detach", "--data", str(data)),
            timeout=300,
        )
        cluster = DevCluster(data)
        kraft(
            *("topic", "create", TOPIC, "--partitions", str(args.partitions)),
            *("--replication-factor", "3", "--config", "min.insync.replicas=2"),
            *("--bootstrap-server", cluster.bootstrap),
        )
        sender = Sender(cluster.bootstrap, args.rate, args.partitions).start()
        try:
            time.sleep(3)  # connections, metadata, the first batches
            sender.phase = "steady"
            progress(f"steady state for {args.steady_s:g} s at {args.rate} rec/s")
            time.sleep(args.steady_s)
            sender.phase = "rolling"
            progress("rolling restart of the brokers")
            began = time.monotonic()
            rolling = subprocess.run(
                launcher.kraft_command(
                    *("dev", "--rolling-restart", "--data", str(data)),
                    *("--timeout", str(args.timeout), "--format", "json"),
                ),
                cwd=ROOT,
                env=launcher.kraft_env(),
                capture_output=True,
                text=True,
                timeout=args.timeout * 4 + 60,
            )
            rolling_s = time.monotonic() - began
            sender.phase = "after"
            sender.latencies["after"] = []
        finally:
            sender.stop()
        if rolling.returncode != 0:
            raise SystemExit(f"kraft dev --rolling-restart failed:\n{rolling.stderr}")
        result = {
            "rate": args.rate,
            "load_average": round(os.getloadavg()[0], 1),
            "steady": summary(sender.latencies["steady"]),
            "rolling": {**summary(sender.latencies["rolling"]), "seconds": round(rolling_s, 1)},
            "errors": sender.errors[:5],
            "error_count": len(sender.errors),
            "restart": json.loads(rolling.stdout),
        }
    finally:
        try:
            kraft("dev", "--stop", "--data", str(data))
        finally:
            shutil.rmtree(data, ignore_errors=True)
    if args.format == "json":
        print_json(result)
    else:
        for phase in ("steady", "rolling"):
            s = result[phase]
            print(
                f"{phase:8} {s['records']:7} records  p50 {s['p50_ms']:8.2f} ms  "
                f"p99 {s['p99_ms']:8.2f} ms  max {s['max_ms']:8.2f} ms"
            )
        print(f"errors seen by the application: {result['error_count']}")
        for n in result["restart"]["nodes"]:
            print(
                f"node {n['id']}: stop {n['stop_s']} s, rejoin {n['rejoin_s']} s, "
                f"ISR whole {n['isr_s']} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
