"""Audit speed: writes N MB of synthetic segments (3 byte-identical replicas, workload-style
values) and a matching history, then times `kraft audit`'s job on local[2] and prints MB/s.

    python bench/audit_bench.py --mb 64 --partitions 6 --record-size 100
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaos.audit.job import create_session, run_audit  # noqa: E402
from chaos.history import Op  # noqa: E402
from clients.record.codec import encode_batch  # noqa: E402
from kraft.log import file_names as fn  # noqa: E402
from kraft.log.checkpoint import write_offset_checkpoint  # noqa: E402
from kraft.log.log import Log  # noqa: E402
from kraft.log.log_config import LogConfig  # noqa: E402
from kraft.log.log_manager import write_meta_properties  # noqa: E402

REPLICAS = (1, 2, 3)
BATCH_RECORDS = 100


def build(root: Path, mb: float, partitions: int, record_size: int):
    """One replica written by the log engine as leader, copied to the others (as followers' logs
    are byte for byte); returns the history of a writer and an assign()ed reader per partition."""
    per_partition = int(mb * 2**20 / len(REPLICAS) / partitions)
    config = LogConfig(segment_bytes=16 * 2**20)
    first = root / "node-1" / "data"
    first.mkdir(parents=True)
    ops, hws, t = [], {}, 0
    for p in range(partitions):
        log = Log.open(first / fn.partition_dir_name("bench", p), config, now_ms=0)
        name, offset = f"bench-{p}", 0
        while log.size_in_bytes() < per_partition:
            values = range(offset, offset + BATCH_RECORDS)
            records = [(None, str(v).zfill(record_size).encode(), (), 1_000) for v in values]
            log.append_as_leader(
                encode_batch(records, producer_id=7, producer_epoch=0, base_sequence=offset),
                0,
                now_ms=0,
            )
            ops += [Op(f"w{p}", "ok", "send", t, v, name, v) for v in values]
            ops.append(Op(f"r{p}", "ok", "poll", t + 1, {name: [[v, v] for v in values]}))
            offset, t = offset + BATCH_RECORDS, t + 2
        hws[("bench", p)] = log.log_end_offset
        log.close()
    write_offset_checkpoint(first / fn.REPLICATION_OFFSET_CHECKPOINT, hws)
    for node in REPLICAS:
        d = root / f"node-{node}" / "data"
        if node != 1:
            shutil.copytree(first, d)
        write_meta_properties(d, "bench", node)
    assigns = [Op(f"r{p}", "ok", "assign", -1, [f"bench-{p}"]) for p in range(partitions)]
    return assigns + ops


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=64, help="segment MB in all, over 3 replicas")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print the audit's progress")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as tmp:
        started = time.monotonic()
        history = build(Path(tmp), args.mb, args.partitions, args.record_size)
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*.log"))
        print(
            f"built {size / 2**20:.1f} MB of segments, {len(history)} history ops in "
            f"{time.monotonic() - started:.1f} s"
        )
        started = time.monotonic()
        spark = create_session(args.master)
        print(f"Spark session: {time.monotonic() - started:.1f} s")
        for run in range(1, args.runs + 1):
            for label, hist in (("segments only", None), ("segments + history", history)):
                started = time.monotonic()
                result = run_audit(
                    spark,
                    [tmp],
                    hist,
                    progress=lambda line: (
                        print(f"  [{time.monotonic() - started:5.1f}s] {line}", flush=True)
                        if args.verbose
                        else None
                    ),
                )
                took = time.monotonic() - started
                assert result.ok, [v.line() for v in result.violations[:5]]
                print(
                    f"run {run}, {label}: {took:.1f} s, {size / 2**20 / took:.1f} MB/s in all; "
                    f"scan {result.stats['scan_seconds']} s = {result.stats['mb_per_s']} MB/s; "
                    f"{result.stats['batches']} batches, {result.stats['records']} records"
                )
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
