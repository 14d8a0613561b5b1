"""The `kraft` Spark data source against `kraft bench consume` on one topic, and a streaming
query's latency per micro-batch.

    PYTHONPATH=$PWD python bench/spark_source_bench.py --bootstrap-server 127.0.0.1:9092 \
        --records 400000 --partitions 4 --master local[2]

1. Fills a new topic with --records records of --record-size bytes (idempotent producer).
2. Batch read, interleaved --pairs times: `kraft bench consume` over the whole topic (a process)
   and `spark.read.format("kraft")...load()` summing the value lengths (the session already
   started; the timing covers planning, the executors' reads and the aggregate). Records/s each.
3. Stream: a query (`readStream.format("kraft")`, processing-time trigger --trigger-ms) writes
   each micro-batch to a foreachBatch sink that notes, per batch, its rows and the age of its
   newest and oldest records when the sink has them; a producer sends --stream-rate records/s
   for --stream-seconds. Prints p50/max of both ages and of Spark's triggerExecution time.
Output: a table, or --format json.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def fill(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    from clients.admin import Admin, NewTopic
    from clients.producer import Producer

    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions)])
    value = b"x" * size
    with Producer(bootstrap, acks="all", linger_ms=5) as producer:
        chunk = 1000
        for start in range(0, records, chunk):
            n = min(chunk, records - start)
            producer.send_batch(topic, [value] * n, partition=(start // chunk) % partitions)
        producer.flush(120)


def bench_consume(bootstrap: str, topic: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "entry.main",
            "bench",
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "-q",
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    doc = json.loads(done.stdout)
    return float(doc["records_per_sec"])


def spark_read(spark, bootstrap: str, topic: str) -> tuple[float, int]:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    row = (
        spark.read.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"))
        .collect()[0]
    )
    return row["n"] / (time.perf_counter() - started), row["n"]


def stream(
    spark, bootstrap: str, partitions: int, rate: float, seconds: float, trigger_ms: int
) -> dict:
    from pyspark.sql import functions as F

    from clients.admin import Admin, NewTopic
    from clients.producer import Producer

    topic = f"stream-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions)])
    batches: list[tuple[int, float, float]] = []

    def sink(df, batch_id: int) -> None:
        row = df.agg(
            F.count("*").alias("n"),
            F.max("timestamp").alias("newest"),
            F.min("timestamp").alias("oldest"),
        ).collect()[0]
        if row["n"]:
            now = time.time()
            batches.append(
                (
                    row["n"],
                    (now - row["newest"].timestamp()) * 1000,
                    (now - row["oldest"].timestamp()) * 1000,
                )
            )

    checkpoint = tempfile.mkdtemp(prefix="kraft-stream-bench-")
    query = (
        spark.readStream.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{trigger_ms} milliseconds")
        .start()
    )
    stop = threading.Event()

    def produce() -> None:
        with Producer(bootstrap, acks="all") as producer:
            gap, due, n = 1.0 / rate, time.monotonic(), 0
            while not stop.is_set():
                producer.send(topic, b"%d" % n, partition=n % partitions)
                n += 1
                due += gap
                stop.wait(max(0.0, due - time.monotonic()))

    sender = threading.Thread(target=produce, daemon=True)
    sender.start()
    time.sleep(seconds)
    stop.set()
    sender.join(30)
    time.sleep(3 * trigger_ms / 1000 + 2)
    triggers = [
        p["durationMs"].get("triggerExecution", 0)
        for p in query.recentProgress
        if p.get("numInputRows")
    ]
    query.stop()
    warm = batches[2:] or batches  # the first batches include the query's start-up

    def p50_max(xs):
        return {"p50": round(statistics.median(xs), 1), "max": round(max(xs), 1)} if xs else {}

    return {
        "batches": len(batches),
        "rows": sum(b[0] for b in batches),
        "newest_age_ms": p50_max([b[1] for b in warm]),
        "oldest_age_ms": p50_max([b[2] for b in warm]),
        "trigger_execution_ms": p50_max(triggers[2:] or triggers),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    p.add_argument("--records", type=int, default=400_000)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--stream-rate", type=float, default=2000.0)
    p.add_argument("--stream-seconds", type=float, default=30.0)
    p.add_argument("--trigger-ms", type=int, default=500)
    p.add_argument("--format", choices=("table", "json"), default="table")
    a = p.parse_args()

    from chaos.audit.job import create_session
    from clients.spark import register

    topic = f"source-bench-{uuid.uuid4().hex[:8]}"
    fill(a.bootstrap_server, topic, a.partitions, a.records, a.record_size)
    spark = create_session(a.master)
    register(spark)
    try:
        spark_read(spark, a.bootstrap_server, topic)  # warm-up: JVM, Python workers
        pairs = []
        for _ in range(a.pairs):
            consume = bench_consume(a.bootstrap_server, topic)
            rate, n = spark_read(spark, a.bootstrap_server, topic)
            assert n == a.records, f"the data source read {n} records of {a.records}"
            pairs.append((consume, rate))
        streaming = stream(
            spark, a.bootstrap_server, a.partitions, a.stream_rate, a.stream_seconds, a.trigger_ms
        )
    finally:
        spark.stop()
    ratios = [s / c for c, s in pairs]
    result = {
        "records": a.records,
        "record_size": a.record_size,
        "partitions": a.partitions,
        "master": a.master,
        "bench_consume_rec_s": [round(c) for c, _ in pairs],
        "spark_read_rec_s": [round(s) for _, s in pairs],
        "spark_over_consume": [round(r, 2) for r in ratios],
        "median_ratio": round(statistics.median(ratios), 2),
        "stream": streaming,
        "stream_rate": a.stream_rate,
        "trigger_ms": a.trigger_ms,
    }
    if a.format == "json":
        print(json.dumps(result, indent=1))
        return 0
    print(f"{a.records} records of {a.record_size} B in {a.partitions} partitions, {a.master}")
    print(f"{'pair':>4} {'bench consume rec/s':>20} {'spark read rec/s':>17} {'ratio':>6}")
    for i, ((c, s), r) in enumerate(zip(pairs, ratios), 1):
        print(f"{i:>4} {c:>20,.0f} {s:>17,.0f} {r:>6.2f}")
    print(f"stream at {a.stream_rate:g} rec/s, trigger {a.trigger_ms} ms: {streaming}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
