"""Reads the history in the Spark executors: each task parses one byte range of history.jsonl
into event rows (sends, polled values, commits, resets, ops); the driver only plans the ranges."""
from __future__ import annotations

import json
import os

from chaos.audit.segments import arrow_schema
from chaos.history import HistoryError, JsonLinesWriter, Op

RANGE_BYTES = 16 * 2**20        # history bytes per task, about
ROWS_PER_BATCH = 65_536
# One row shape for every event kind (unused columns null): a single scan, cached, then split.
EVENT_FIELDS = [("kind", "string"), ("idx", "long"), ("pos", "int"), ("process", "string"),
                ("type", "string"), ("f", "string"), ("time", "long"), ("partition", "string"),
                ("value", "long"), ("offset", "long"), ("group", "string"),
                ("assign", "boolean"), ("error", "string")]
_NAMES = [name for name, _ in EVENT_FIELDS]


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def plan_ranges(path: str, size: int, parallelism: int) -> list[tuple[str, int, int]]:
    """(path, start, end) byte ranges: about RANGE_BYTES each, at least one per core once the
    file is big enough to share."""
    n = max(1, -(-size // RANGE_BYTES))
    if size >= RANGE_BYTES // 4:
        n = max(n, parallelism)
    step = -(-max(size, 1) // n)
    return [(path, lo, min(lo + step, size)) for lo in range(0, max(size, 1), step)]


def _lines(path: str, start: int, end: int):
    """(byte offset, line bytes, is the file's torn last line) of the lines that start in
    [start, end): a line belongs to the range holding its first byte."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = start
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":      # mid-line: that line is the previous range's
                f.readline()
            pos = f.tell()
        else:
            f.seek(0)
        while pos < end:
            line = f.readline()
            if not line:
                return
            yield pos, line, not line.endswith(b"\n") and pos + len(line) == size
            pos += len(line)


class _Rows:
    """Column buffers per event kind: a kind fills only its own columns (a poll's values, the
    bulk of a history, fill 6 of 13); the others become null arrays when a batch is made."""

    def __init__(self, schema) -> None:
        self.schema = schema
        self.kinds: dict[str, dict[str, list]] = {}
        self.count = 0

    def __call__(self, kind, idx, **fields):
        cols = self.kinds.get(kind)
        if cols is None:
            cols = self.kinds[kind] = {"idx": [], **{name: [] for name in fields}}
        cols["idx"].append(idx)
        for name, value in fields.items():
            cols[name].append(value)
        self.count += 1

    def batches(self):
        import pyarrow as pa

        for kind, cols in self.kinds.items():
            n = len(cols["idx"])
            arrays = [pa.array([kind] * n, pa.string()) if name == "kind" else
                      pa.array(cols[name], type=self.schema.field(name).type) if name in cols else
                      pa.nulls(n, type=self.schema.field(name).type) for name in _NAMES]
            yield from pa.Table.from_arrays(arrays, schema=self.schema).to_batches()
        self.kinds, self.count = {}, 0


def scan(batches):
    """mapInArrow over (path, start, end) rows: the event rows of those byte ranges."""
    row = _Rows(arrow_schema(EVENT_FIELDS))
    for batch in batches:
        for path, start, end in zip(*(batch.column(i).to_pylist() for i in range(3))):
            for idx, line, torn in _lines(path, start, end):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except ValueError as exc:
                    if not torn:        # a killed workload's torn last line is skipped (Jepsen)
                        row("error", idx, error=f"not JSON ({exc})")
                    continue
                try:
                    op = Op.from_json(doc)
                except (ValueError, TypeError) as exc:
                    row("error", idx, error=str(exc))
                    continue
                _events(row, idx, op)
                if row.count >= ROWS_PER_BATCH:
                    yield from row.batches()
    yield from row.batches()


def _events(row, idx: int, op: Op) -> None:
    """The rows one op gives: what the history checks read (as the driver's flatten did)."""
    p = str(op.process)
    row("op", idx, process=p, type=op.type, f=op.f, time=op.time)
    if op.type == "invoke":
        return
    if op.f == "send":
        row("send", idx, process=p, type=op.type, partition=op.partition, value=_int(op.value),
            offset=op.offset)
    elif op.type != "ok":
        return
    elif op.f in ("assign", "subscribe"):
        row("reset", idx, process=p, assign=op.f == "assign")
    elif op.f == "poll":
        for part in op.rebalanced:
            row("rebalance", idx, process=p, partition=part)
        pos = 0
        for part, pairs in op.reads().items():
            for offset, value in pairs:
                row("read", idx, pos=pos, process=p, partition=part, offset=offset,
                    value=_int(value))
                pos += 1
    elif op.f == "commit":
        for part, o in op.commits().items():
            row("commit", idx, process=p, group=op.group or "", partition=part, offset=o)


def raise_first_error(path: str, idx: int, error: str) -> None:
    """A bad line, named as read_history names it: the file and the line number."""
    with open(path, "rb") as f:
        line = f.read(idx).count(b"\n") + 1
    raise HistoryError(f"{path} line {line}: {error}")


def write_ops(path, ops) -> None:
    """Ops given in memory (tests, the bench) as the JSON lines file the scan reads."""
    with JsonLinesWriter(path) as w:
        for op in ops:
            w.write(op)


class HistoryFrames:
    """The scanned history as the checks' DataFrames (cached: several checks read each)."""

    def __init__(self, spark, path: str) -> None:
        from pyspark.sql import functions as F

        from chaos.audit.segments import ddl

        path = os.path.abspath(path)
        ranges = plan_ranges(path, os.path.getsize(path), spark.sparkContext.defaultParallelism)
        rdd = spark.sparkContext.parallelize(ranges, len(ranges))
        ranges_df = spark.createDataFrame(rdd, "path string, start long, end long")
        self.events = ranges_df.mapInArrow(scan, ddl(EVENT_FIELDS)).cache()
        counts = {r["kind"]: r for r in self.events.groupBy("kind").agg(
            F.count("*").alias("n"), F.min_by("idx", "idx").alias("first_idx"),
            F.min_by("error", "idx").alias("first_error")).collect()}
        if "error" in counts:
            self.events.unpersist()
            raise_first_error(path, counts["error"]["first_idx"], counts["error"]["first_error"])
        self.counts = {k: r["n"] for k, r in counts.items()}
        self.ops = self.events.filter(F.col("kind") == "op").select(
            "idx", "process", "type", "f", "time")

    def release(self) -> None:
        self.events.unpersist()


def timeline(ops, buckets: int = 100) -> tuple[dict, dict, float, int]:
    """Per f, ok completions per second and [p50, max] latency in ms per time bucket (about
    `buckets` over the run); an ok's latency pairs it with its process's invoke before it.
    Computed in the executors; the driver gets a few hundred numbers."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    span_row = ops.agg(F.min_by("time", "idx").alias("t0"), F.max("time").alias("top")).collect()[0]
    if span_row["t0"] is None:
        return {}, {}, 1.0, 0
    t0 = span_row["t0"]
    span = span_row["top"] - t0 or 1
    bucket = max(span / buckets, 1e6)      # at least a millisecond, in ns
    w = Window.partitionBy("process").orderBy("idx")
    done = (ops.withColumn("prev_type", F.lag("type").over(w))
            .withColumn("prev_time", F.lag("time").over(w))
            .filter((F.col("type") == "ok") & (F.col("prev_type") == "invoke"))
            .withColumn("b", F.floor((F.col("time") - t0) / bucket).cast("long"))
            .withColumn("ms", (F.col("time") - F.col("prev_time")) / 1e6)
            .groupBy("f", "b").agg(F.count("*").alias("n"),
                                   F.sort_array(F.collect_list("ms")).alias("ms")))
    rows = done.select("f", "b", "n", F.element_at("ms", (F.floor(F.size("ms") / 2) + 1)
                                                    .cast("int")).alias("p50"),
                       F.array_max("ms").alias("max")).collect()
    rate, latency = {}, {}
    for r in sorted(rows, key=lambda r: (r["f"], r["b"])):
        t = r["b"] * bucket / 1e9
        rate.setdefault(r["f"], []).append((t, r["n"] / (bucket / 1e9)))
        latency.setdefault(r["f"], []).append((t, r["p50"], r["max"]))
    return rate, latency, span / 1e9, t0
