"""Partitions one broker can host before the open-file limit (EMFILE), RSS and fds per partition:
the broker's replica layer (metadata replay -> ReplicaManager -> LogManager) in a child process
per source tree, hosting topics of 100 partitions (one batch appended to each) until a failure.

    python bench/partitions_per_broker.py [--nofile 20000] [--max 12000] [--tree path ...]

Each --tree (default: this checkout) runs in its own child with RLIMIT_NOFILE set to --nofile
(what a node raises its soft limit to: the hard limit), so two trees compare A/B in one run."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PER_TOPIC = 100

_CHILD = r"""
import json, os, sys, time, pathlib
from broker.broker_metadata import BrokerMetadata
from broker.replica_manager import ReplicaManager
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.records import PartitionRecord, RegisterBrokerRecord, TopicRecord

data, limit, per_topic = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
page = os.sysconf("SC_PAGE_SIZE")

statm = os.open("/proc/self/statm", os.O_RDONLY)   # opened now: at EMFILE nothing opens

def rss():
    return int(os.pread(statm, 200, 0).split()[1]) * page

def fds():
    return len(os.listdir("/proc/self/fd"))

manager = LogManager([data], LogConfig(), now_ms=0)
replicas = ReplicaManager(manager, 1, clock_ms=lambda: 0)
metadata = BrokerMetadata(1, replicas, {})
metadata.replay_committed([(0, 1, RegisterBrokerRecord(1, "inc", 1, "h", 1, fenced=False))])
batch = encode_batch([(None, b"v" * 100, (), 1000)])
base_rss, base_fds, offset, hosted, error, start = rss(), fds(), 1, 0, "", time.monotonic()
stats = {}
while hosted < limit:
    topic_id = f"{offset:032x}"
    records = [(offset, 1, TopicRecord(f"t{offset}", topic_id))]
    records += [(offset + 1 + p, 1, PartitionRecord(topic_id, p, (1,), (1,), 1))
                for p in range(per_topic)]
    try:
        metadata.replay_committed(records)
    except OSError as exc:             # a tree where a failing dir still raises out
        error = f"raised {exc}"
    offset += per_topic + 1
    now = len(replicas.partitions())
    for p in range(per_topic):
        if replicas.get(f"t{records[0][0]}", p) is not None:
            if replicas.append(f"t{records[0][0]}", p, batch, 1, 0).error_code:
                error = error or "append failed"
    offline = getattr(manager, "failures", None)
    if offline is not None and offline.offline_dirs:
        error = error or "dir offline: " + next(iter(offline.offline_dirs.values()))[:90]
    if error or now == hosted:
        break
    hosted = now
    # Measured after each whole step: at the limit, listing /proc/self/fd needs an fd too.
    stats = {"rss_per_partition_kib": round((rss() - base_rss) / hosted / 1024, 1),
             "fds_per_partition": round((fds() - base_fds) / hosted, 2)}
seconds = time.monotonic() - start
print(json.dumps({"hosted": hosted, "error": error, "seconds": round(seconds, 1), **stats}))
"""


def run_tree(tree: pathlib.Path, nofile: int, limit: int) -> dict:
    def lower() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile, hard), hard))

    with tempfile.TemporaryDirectory(prefix="kraft-partitions-") as data:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, data, str(limit), str(PER_TOPIC)],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            preexec_fn=lower,
            timeout=3600,
        )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nofile", type=int, default=resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    parser.add_argument("--max", type=int, default=12_000, help="stop after this many partitions")
    parser.add_argument(
        "--tree",
        action="append",
        type=pathlib.Path,
        help="a source tree to measure (repeatable; default: this checkout)",
    )
    args = parser.parse_args()
    print(
        f"RLIMIT_NOFILE soft {args.nofile}, topics of {PER_TOPIC} partitions, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(f"{'tree':<40} {'partitions':>10} {'fds/p':>6} {'RSS KiB/p':>9} {'s':>6}  stopped by")
    for tree in args.tree or [ROOT]:
        r = run_tree(tree.resolve(), args.nofile, args.max)
        print(
            f"{str(tree)[-40:]:<40} {r['hosted']:>10} {r['fds_per_partition']:>6} "
            f"{r['rss_per_partition_kib']:>9} {r['seconds']:>6}  {r['error'] or 'the --max cap'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
