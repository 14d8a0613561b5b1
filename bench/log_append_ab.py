"""Leader appends to one Log (batches of --batch-bytes, index.interval.bytes 4096, no fsync), in
a child process per source tree, interleaved --pairs times so trees compare A/B in one run.

    python bench/log_append_ab.py --tree /path/to/main --tree . [--batches 20000] [--pairs 3]"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

_CHILD = r"""
import sys, tempfile, time, pathlib
from clients.record.codec import encode_batch
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

batches, size = int(sys.argv[1]), int(sys.argv[2])
batch = encode_batch([(None, b"v" * (size - 80), (), 1000)])
with tempfile.TemporaryDirectory() as d:
    log = Log.open(pathlib.Path(d) / "t-0", LogConfig(index_interval_bytes=4096), now_ms=0)
    start = time.perf_counter()
    for _ in range(batches):
        log.append_as_leader(batch, leader_epoch=1, now_ms=0)
    elapsed = time.perf_counter() - start
    log.close()
print(batches / elapsed)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=pathlib.Path, required=True)
    parser.add_argument("--batches", type=int, default=20_000)
    parser.add_argument("--batch-bytes", type=int, default=16_384)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    rates: dict[pathlib.Path, list[float]] = {t: [] for t in args.tree}
    for _ in range(args.pairs):
        for tree in args.tree:
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(args.batches), str(args.batch_bytes)],
                cwd=tree,
                check=True,
                text=True,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(tree)},
            )
            rates[tree].append(float(out.stdout))
    first = statistics.median(rates[args.tree[0]])
    print(
        f"{time.strftime('%Y-%m-%d')}: {args.batches} appends of {args.batch_bytes} B, "
        f"median of {args.pairs} interleaved runs"
    )
    for tree, r in rates.items():
        med = statistics.median(r)
        print(
            f"{str(tree)[-40:]:<40} {med:>10.0f} batches/s  {med / first:.2f}x  "
            f"({', '.join(f'{x:.0f}' for x in r)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
