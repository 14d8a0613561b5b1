"""Restart time of a log dir (LogManager open, what a node does before it serves) with a large
retained log against an empty one, after clean and unclean shutdowns; and the append rate on each.

    python bench/restart_time.py [--retained-gb 2] [--tail-mb 16] [--pairs 3] [--dir /tmp]
                                 [--tree /path/to/a/checkout --tree .]

Each log dir holds one partition: `--retained-gb` of 16 KiB batches in rolled, flushed 1 GiB
segments (the recovery point is at the active segment) plus `--tail-mb` unflushed in the active
segment; the empty dir holds only the same tail. Opens run in a child process per measurement,
interleaved (empty, large, empty, large, ..., for each --tree in turn), with the page cache warm (a cold cache would make
the full scan slower still). The dirs are deleted at the end."""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_ROOT = pathlib.Path(__file__).resolve().parents[1]

_BUILD = r"""
import sys, pathlib
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager

dir, retained, tail = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
batch = encode_batch([(None, b"v" * (16384 - 80), (), 1000)])
manager = LogManager([dir], LogConfig(), now_ms=0)
log = manager.get_or_create_log("t", 0)
while log.size_in_bytes() < retained:
    log.append_as_leader(batch, leader_epoch=1, now_ms=0)
if retained:
    log._roll(log.log_end_offset)
manager.flush_due(0)            # the periodic flusher: rolled segments fsynced, recovery point moves
while log.size_in_bytes() < retained + tail:
    log.append_as_leader(batch, leader_epoch=1, now_ms=0)
manager.checkpoint()            # the periodic checkpoint; no close: the shutdown is unclean
print(log.segment_count, log.recovery_point, log.log_end_offset)
"""

_OPEN = r"""
import sys, time, pathlib
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager

dir, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
if mode == "no-checkpoint":
    (dir / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
start = time.perf_counter()
manager = LogManager([dir], LogConfig(), now_ms=0)
elapsed = time.perf_counter() - start
log = manager.get_log("t", 0)
scanned = log.recovered_segments
if mode == "clean":
    manager.close()             # marker written again for the next clean open
else:
    manager.checkpoint()        # the recovery point as it was; no marker: the next open is unclean
    for log in manager.logs().values():
        log.close()
print(elapsed, scanned)
"""

_APPEND = r"""
import sys, time, pathlib
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager

dir, batches = pathlib.Path(sys.argv[1]), int(sys.argv[2])
batch = encode_batch([(None, b"v" * (16384 - 80), (), 1000)])
manager = LogManager([dir], LogConfig(), now_ms=0)
log = manager.get_log("t", 0)
end = log.log_end_offset
start = time.perf_counter()
for _ in range(batches):
    log.append_as_leader(batch, leader_epoch=1, now_ms=0)
elapsed = time.perf_counter() - start
log.truncate_to(end)            # leave the dir as it was for the next run
manager.close()
print(batches / elapsed)
"""


def _child(tree: pathlib.Path, code: str, *args: object) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=tree,
        check=True,
        text=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    return out.stdout.strip()


def _line(what: str, unit: str, values: dict[str, list[float]], extra: str = "") -> str:
    empty, large = statistics.median(values["empty"]), statistics.median(values["large"])
    return (
        f"{what:<34} empty {empty:9.1f} {unit}  large {large:9.1f} {unit}  ratio "
        f"{large / empty:6.2f}x{extra}  (large: {', '.join(f'{v:.0f}' for v in values['large'])})"
    )


def _appends(
    trees: list[pathlib.Path], dirs: dict[str, pathlib.Path], pairs: int, batches: int
) -> None:
    rates = {tree: {"empty": [], "large": []} for tree in trees}
    for _ in range(pairs):
        for tree in trees:
            for name, d in dirs.items():
                rates[tree][name].append(float(_child(tree, _APPEND, d, batches)))
    for tree in trees:
        print(_line(f"append 16 KiB {tree.name}", "b/s", rates[tree]), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retained-gb", type=float, default=2.0)
    parser.add_argument("--tail-mb", type=float, default=16.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--append-batches", type=int, default=20_000)
    parser.add_argument("--dir", type=pathlib.Path, default=pathlib.Path(tempfile.gettempdir()))
    parser.add_argument(
        "--tree",
        type=pathlib.Path,
        action="append",
        help="a kraft checkout to measure, interleaved with the others given (default: this one)",
    )
    args = parser.parse_args()
    trees = [t.resolve() for t in args.tree or [_ROOT]]
    root = pathlib.Path(tempfile.mkdtemp(prefix="kraft-restart-", dir=args.dir))
    try:
        dirs = {"empty": root / "empty", "large": root / "large"}
        tail = int(args.tail_mb * 2**20)
        for name, retained in (("empty", 0), ("large", int(args.retained_gb * 2**30))):
            t0 = time.perf_counter()
            built = _child(trees[-1], _BUILD, dirs[name], retained, tail)
            print(
                f"built {name}: segments, recovery point, log end = {built} "
                f"({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
        print(
            f"{time.strftime('%Y-%m-%d')}: LogManager open, {args.retained_gb} GiB retained vs "
            f"none, {args.tail_mb} MiB unflushed tail, medians of {args.pairs} interleaved runs"
        )
        # "unclean" first: each reopen leaves the dir without a marker. "clean" next (its first
        # open is unclean, so each dir is opened once before being measured), then the appends
        # (on cleanly closed dirs), and "no-checkpoint" last: it leaves every dir to recover whole.
        for mode in ("unclean", "clean", "append", "no-checkpoint"):
            if mode == "append":
                _appends(trees, dirs, args.pairs, args.append_batches)
                continue
            if mode == "clean":
                for d in dirs.values():
                    _child(trees[0], _OPEN, d, "clean")
            times = {tree: {"empty": [], "large": []} for tree in trees}
            scanned: dict[str, str] = {}
            for _ in range(args.pairs):
                for tree in trees:
                    for name, d in dirs.items():
                        elapsed, segs = _child(tree, _OPEN, d, mode).split()
                        times[tree][name].append(float(elapsed) * 1000)
                        scanned[name] = segs
            for tree in trees:
                print(
                    _line(
                        f"open {mode} {tree.name}",
                        "ms",
                        times[tree],
                        f"  segments scanned {scanned['empty']} / {scanned['large']}",
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
