"""What the metrics endpoint costs: `kraft bench produce` against two `kraft dev` nodes of this
checkout, one with metrics.listener and one without, in interleaved pairs (the order alternating),
with each node's own CPU time per record (from /proc, steadier than records/s on a shared
machine); then the cost of one scrape of the first node.

    python bench/metrics_cost.py [--pairs 4] [--records 300000] [--scrapes 50] [--partitions 100]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(HERE), "PYTHONUNBUFFERED": "1"}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def start(data: pathlib.Path, metrics: bool) -> tuple[subprocess.Popen, str, str | None]:
    cmd = [sys.executable, "-m", "entry.main", "dev", "--data", str(data), "--port", "0"]
    if not metrics:
        cmd += ["--override", "metrics.listener="]
    proc = subprocess.Popen(
        cmd, cwd=HERE, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            line = proc.stdout.readline().decode()
            if "listening on" in line:
                address = line.split("listening on ", 1)[1].split(",", 1)[0]
                scrape = (
                    line.split("metrics on http://", 1)[1].split("/", 1)[0]
                    if "metrics on" in line
                    else None
                )
                return proc, address, scrape
    proc.kill()
    raise RuntimeError("the node did not start")


def kraft(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "entry.main", *args, "--format", "json"],
        cwd=HERE,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--scrape-only", action="store_true", help="skip the produce pairs")
    ap.add_argument(
        "--partitions",
        type=int,
        default=100,
        help="partitions of an extra topic created before the scrapes are timed",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        on = start(pathlib.Path(tmp, "on"), True)
        off = start(pathlib.Path(tmp, "off"), False)
        rows = {"on": [], "off": []}
        try:
            for i in range(0 if args.scrape_only else args.pairs):
                order = [("on", on), ("off", off)] if i % 2 == 0 else [("off", off), ("on", on)]
                for side, (proc, address, _) in order:
                    before = cpu_s(proc.pid)
                    r = kraft(
                        "bench",
                        "produce",
                        "--bootstrap-server",
                        address,
                        "--topic",
                        f"b{i}",
                        "--num-records",
                        str(args.records),
                    )
                    used = cpu_s(proc.pid) - before
                    rows[side].append((r["records_per_sec"], used / args.records * 1e6))
                    print(
                        f"pair {i + 1} {side:3}: {r['records_per_sec']:>9,.0f} rec/s, "
                        f"node {used / args.records * 1e6:.2f} µs CPU/record",
                        flush=True,
                    )
            for side in ("on", "off") if rows["on"] else ():
                rates, cpus = zip(*rows[side])
                print(
                    f"{side:3}: mean {statistics.mean(rates):,.0f} rec/s, "
                    f"{statistics.mean(cpus):.2f} µs CPU/record"
                )
            if rows["on"]:
                rate = statistics.mean(r for r, _ in rows["on"]) / statistics.mean(
                    r for r, _ in rows["off"]
                )
                cpu = statistics.mean(c for _, c in rows["on"]) / statistics.mean(
                    c for _, c in rows["off"]
                )
                pairs = ", ".join(f"{a[0] / b[0]:.2f}" for a, b in zip(rows["on"], rows["off"]))
                print(
                    f"on/off: records/s {rate:.3f}x (pairs {pairs}); node CPU per record {cpu:.3f}x"
                )
            proc, address, scrape = on
            kraft(
                "topic",
                "create",
                "many",
                "--partitions",
                str(args.partitions),
                "--bootstrap-server",
                address,
            )
            time.sleep(1)
            size = len(urllib.request.urlopen(f"http://{scrape}/metrics").read())
            # The node's own idle work (heartbeats, Raft, timers) over as long, taken off.
            before, idle_start = cpu_s(proc.pid), time.perf_counter()
            time.sleep(5)
            idle_rate = (cpu_s(proc.pid) - before) / (time.perf_counter() - idle_start)
            before, wall = cpu_s(proc.pid), time.perf_counter()
            for _ in range(args.scrapes):
                urllib.request.urlopen(f"http://{scrape}/metrics").read()
            wall = time.perf_counter() - wall
            used = (cpu_s(proc.pid) - before - idle_rate * wall) / args.scrapes
            print(
                f"one scrape ({args.partitions + args.pairs + 1} partitions, {size:,} bytes): "
                f"{wall / args.scrapes * 1000:.1f} ms wall, {used * 1000:.1f} ms node CPU "
                f"(idle node: {idle_rate * 100:.0f}% of a core taken off)"
            )
        finally:
            for proc, _, _ in (on, off):
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
