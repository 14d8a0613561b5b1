"""Transactions' cost: transactional produce against the idempotent producer, read_committed
against read_uncommitted consumption, and commit latency.

    PYTHONPATH=$PWD python bench/txn_bench.py --bootstrap-server HOST:PORT[,...] \
        --replication-factor 3 --records 100000 --txn-sizes 100,1000,10000 --pairs 2

For each transaction size, interleaved --pairs times: an idempotent producer (acks=all) sends
--records records to a new topic, then a transactional producer sends as many in transactions of
that size (begin, send, commit); rec/s of each, their ratio, and the commit_transaction latency
p50/p99. Then the transactional topic is read to its end by a read_committed and a
read_uncommitted consumer (rec/s each). Records go out through send_batch (chunks of at most
1,000) so the client's per-record Python weighs the same on both sides. --format json for
scripts.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from clients.admin import Admin, NewTopic  # noqa: E402
from clients.consumer import Consumer  # noqa: E402
from clients.producer import Producer  # noqa: E402
from clients.types import TopicPartition  # noqa: E402

CHUNK = 1000


def new_topic(bootstrap: str, partitions: int, rf: int) -> str:
    name = f"txn-bench-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        admin.create_topics(
            [NewTopic(name, partitions, rf, {"min.insync.replicas": str(min(2, rf))})]
        )
    return name


def _send(producer: Producer, topic: str, value: bytes, n: int, partitions: int, first: int):
    sent = 0
    while sent < n:
        k = min(CHUNK, n - sent)
        producer.send_batch(topic, [value] * k, partition=(first + sent // CHUNK) % partitions)
        sent += k


def idempotent(bootstrap: str, topic: str, records: int, value: bytes, partitions: int) -> float:
    with Producer(bootstrap, acks="all", linger_ms=5) as producer:
        started = time.perf_counter()
        _send(producer, topic, value, records, partitions, 0)
        producer.flush(300)
        return records / (time.perf_counter() - started)


def transactional(
    bootstrap: str, topic: str, records: int, value: bytes, partitions: int, txn_size: int
) -> tuple[float, list[float]]:
    commits = []
    with Producer(
        bootstrap, transactional_id=f"txn-bench-{uuid.uuid4().hex[:8]}", linger_ms=5
    ) as producer:
        producer.init_transactions(60)
        started = time.perf_counter()
        done = 0
        while done < records:
            n = min(txn_size, records - done)
            producer.begin_transaction()
            _send(producer, topic, value, n, partitions, done // CHUNK)
            t = time.perf_counter()
            producer.commit_transaction(120)
            commits.append((time.perf_counter() - t) * 1000)
            done += n
        return records / (time.perf_counter() - started), commits


def consume(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int) -> float:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer = Consumer(bootstrap, isolation_level=isolation, auto_offset_reset="earliest")
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        started, count = time.perf_counter(), 0
        deadline = time.monotonic() + 300
        while count < expect and time.monotonic() < deadline:
            count += len(consumer.poll(timeout_ms=500))
        return count / (time.perf_counter() - started)
    finally:
        consumer.close()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--replication-factor", type=int, default=3)
    p.add_argument("--txn-sizes", default="100,1000,10000")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--format", choices=("table", "json"), default="table")
    a = p.parse_args()
    value = b"x" * a.record_size
    rows = []
    for size in (int(s) for s in a.txn_sizes.split(",")):
        for _ in range(a.pairs):
            base = idempotent(
                a.bootstrap_server,
                new_topic(a.bootstrap_server, a.partitions, a.replication_factor),
                a.records,
                value,
                a.partitions,
            )
            topic = new_topic(a.bootstrap_server, a.partitions, a.replication_factor)
            rate, commits = transactional(
                a.bootstrap_server, topic, a.records, value, a.partitions, size
            )
            committed = consume(
                a.bootstrap_server, topic, a.partitions, "read_committed", a.records
            )
            uncommitted = consume(
                a.bootstrap_server, topic, a.partitions, "read_uncommitted", a.records
            )
            rows.append(
                {
                    "txn_size": size,
                    "idempotent_rec_s": round(base),
                    "transactional_rec_s": round(rate),
                    "ratio": round(rate / base, 2),
                    "commit_p50_ms": pct(commits, 0.5),
                    "commit_p99_ms": pct(commits, 0.99),
                    "commits": len(commits),
                    "read_committed_rec_s": round(committed),
                    "read_uncommitted_rec_s": round(uncommitted),
                    "committed_over_uncommitted": round(committed / uncommitted, 2),
                }
            )
    if a.format == "json":
        print(
            json.dumps(
                {
                    "records": a.records,
                    "record_size": a.record_size,
                    "partitions": a.partitions,
                    "replication_factor": a.replication_factor,
                    "runs": rows,
                },
                indent=1,
            )
        )
        return 0
    cols = list(rows[0])
    print(" ".join(f"{c:>22}" for c in cols))
    for r in rows:
        print(" ".join(f"{r[c]:>22}" for c in cols))
    by_size: dict[int, list[float]] = {}
    for r in rows:
        by_size.setdefault(r["txn_size"], []).append(r["ratio"])
    for size, ratios in by_size.items():
        print(
            f"transactions of {size}: transactional / idempotent median "
            f"{statistics.median(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
