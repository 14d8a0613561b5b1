"""A 30-minute chaos run's files, synthesised (3 replicas' segments, a history.jsonl of the
workload's shape), then `kraft audit` timed on them as a user runs it (a real process).

    python bench/audit_run_bench.py --dir /tmp/run30 --values 1200000   # build once
    python bench/audit_run_bench.py --dir /tmp/run30 --repo /work/main  # time another checkout

History: per value a send invoke and ok line (Jepsen style), and every value polled by an
assign()ed reader and a subscribe()d one in polls of --poll values: about 200 bytes a value.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REPLICAS = (1, 2, 3)
BATCH_RECORDS = 100
MS = 1_000_000


def build(root: Path, values: int, partitions: int, poll: int) -> None:
    from clients.record.codec import encode_batch
    from kraft.log import file_names as fn
    from kraft.log.checkpoint import write_offset_checkpoint
    from kraft.log.log import Log
    from kraft.log.log_config import LogConfig
    from kraft.log.log_manager import write_meta_properties

    first = root / "nodes" / "node-1" / "data"
    first.mkdir(parents=True)
    config = LogConfig(segment_bytes=16 * 2**20)
    per_partition = values // partitions
    hws, t, value = {}, 0, 0
    with open(root / "history.jsonl", "w") as h:

        def line(doc):
            h.write(json.dumps(doc, separators=(",", ":")) + "\n")

        for p in range(partitions):
            name = f"bench-{p}"
            for reader, f, target in (("a", "assign", name), ("s", "subscribe", "bench")):
                line(
                    {
                        "process": f"{reader}{p}",
                        "type": "invoke",
                        "f": f,
                        "time": t,
                        "value": [target],
                    }
                )
                line(
                    {
                        "process": f"{reader}{p}",
                        "type": "ok",
                        "f": f,
                        "time": t + 1,
                        "value": [target],
                    }
                )
            log = Log.open(first / fn.partition_dir_name("bench", p), config, now_ms=0)
            pending: list[tuple[int, int]] = []
            for base in range(0, per_partition, BATCH_RECORDS):
                vals = range(value, value + min(BATCH_RECORDS, per_partition - base))
                log.append_as_leader(
                    encode_batch(
                        [(None, str(v).encode(), (), 1_000) for v in vals],
                        producer_id=7,
                        producer_epoch=0,
                        base_sequence=base,
                    ),
                    0,
                    now_ms=0,
                )
                for i, v in enumerate(vals):
                    proc = f"w{p}.{v % 4}"
                    line(
                        {
                            "process": proc,
                            "type": "invoke",
                            "f": "send",
                            "time": t,
                            "value": v,
                            "partition": name,
                        }
                    )
                    line(
                        {
                            "process": proc,
                            "type": "ok",
                            "f": "send",
                            "time": t + MS,
                            "value": v,
                            "partition": name,
                            "offset": base + i,
                        }
                    )
                    pending.append((base + i, v))
                    t += MS // 4
                    if len(pending) == poll:
                        for reader in ("a", "s"):
                            line(
                                {
                                    "process": f"{reader}{p}",
                                    "type": "invoke",
                                    "f": "poll",
                                    "time": t,
                                }
                            )
                            line(
                                {
                                    "process": f"{reader}{p}",
                                    "type": "ok",
                                    "f": "poll",
                                    "time": t + MS,
                                    "value": {name: [list(x) for x in pending]},
                                }
                            )
                        pending = []
                value += len(vals)
            for reader in ("a", "s"):
                if pending:
                    line(
                        {
                            "process": f"{reader}{p}",
                            "type": "ok",
                            "f": "poll",
                            "time": t,
                            "value": {name: [list(x) for x in pending]},
                        }
                    )
            hws[("bench", p)] = log.log_end_offset
            log.close()
    write_offset_checkpoint(first / fn.REPLICATION_OFFSET_CHECKPOINT, hws)
    for node in REPLICAS:
        d = root / "nodes" / f"node-{node}" / "data"
        if node != 1:
            shutil.copytree(first, d)
        write_meta_properties(d, "bench", node)


class _TreeCpu:
    """User and system CPU seconds of a process and its descendants (the driver, its JVM, the
    Python workers), sampled from /proc twice a second while it runs: on a shared machine a
    steadier measure than wall time (a worker that ends between samples loses under 0.5 s)."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.seen, self.stop = pid, {}, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        parents, cpu = {}, {}
        tick = os.sysconf("SC_CLK_TCK")
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parents[int(d)] = int(fields[1])
                cpu[int(d)] = (int(fields[11]) + int(fields[12])) / tick
        for pid in cpu:
            p = pid
            while p in parents and p != self.pid:
                p = parents[p]
            if p == self.pid:
                self.seen[pid] = cpu[pid]

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            self._sample()

    def total(self) -> float:
        self.stop.set()
        self.thread.join()
        return sum(self.seen.values())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", required=True, help="where the run's files are (built if absent)")
    ap.add_argument("--values", type=int, default=1_200_000, help="values sent in all")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--poll", type=int, default=40, help="values per poll")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="audit on a Spark standalone cluster of this many 1-core workers, "
        "started here from the installed PySpark (overrides --master)",
    )
    ap.add_argument("--repo", default=str(ROOT), help="the checkout whose `kraft audit` runs")
    ap.add_argument("--verbose", action="store_true", help="print the audit's progress lines")
    args = ap.parse_args()
    root = Path(args.dir)
    if not (root / "history.jsonl").exists():
        started = time.monotonic()
        build(root, args.values, args.partitions, args.poll)
        print(f"built in {time.monotonic() - started:.1f} s")
    seg = sum(f.stat().st_size for f in (root / "nodes").rglob("*.log"))
    hist = (root / "history.jsonl").stat().st_size
    print(
        f"history {hist / 2**20:.0f} MB, segments {seg / 2**20:.0f} MB over {len(REPLICAS)} replicas"
    )
    if args.workers:
        from chaos.audit.standalone import standalone_cluster

        with standalone_cluster(
            root / "standalone", workers=args.workers, worker_memory="4g"
        ) as url:
            return run(args, root, url)
    return run(args, root, args.master)


def run(args, root: Path, master: str) -> int:
    env = {**os.environ, "PYTHONPATH": args.repo, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = root / "audit-out"
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "entry.main",
            "audit",
            "--data",
            str(root / "nodes"),
            "--history",
            str(root / "history.jsonl"),
            "--master",
            master,
            "--out",
            str(out),
        ],
        cwd=args.repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tree = _TreeCpu(proc.pid)
    stdout, stderr = proc.communicate()
    took, cpu = time.monotonic() - started, tree.total()
    if args.verbose or not stdout.strip():
        print(stderr[-1500:])
    print(stdout.strip().splitlines()[0] if stdout.strip() else "")
    stats = json.loads((out / "report.json").read_text())["stats"] if proc.returncode < 2 else {}
    print(
        f"kraft audit ({args.repo}, {master}): exit {proc.returncode}, {took:.1f} s wall, "
        f"{cpu:.1f} CPU s (audit {stats.get('seconds')} s, scan {stats.get('scan_seconds')} s, "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
