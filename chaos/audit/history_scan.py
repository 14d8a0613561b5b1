"""Reads the history in the Spark executors: each task parses one byte range of history.jsonl
into event rows (sends, polled values, commits, resets, ops); the driver only plans the ranges.
A range goes through pyarrow's JSON reader (history_columns) where that reads it exactly, else
line by line (json.loads and Op.from_json), which names bad lines."""

from __future__ import annotations

import json
import os

from chaos.audit.history_columns import Events, Unfit, events
from chaos.audit.segments import chunk_batch
from chaos.history import HistoryError, JsonLinesWriter, Op

RANGE_BYTES = 16 * 2**20  # history bytes per task, about
ROWS_PER_BATCH = 65_536
# The scan's rows are chunks: a row per event kind and key (the partition of sends, polled
# values, rebalances and commits; the process of ops; none for resets and errors) per
# ROWS_PER_BATCH events of a task, each event field a list (null where the kind has no such
# field). Spark's per-row cost falls on a few hundred rows, not on every polled value.
KEY_FIELDS = [("kind", "string"), ("key", "string")]
EVENT_FIELDS = [
    ("idx", "long"),
    ("pos", "int"),
    ("process", "string"),
    ("type", "string"),
    ("f", "string"),
    ("time", "long"),
    ("value", "long"),
    ("offset", "long"),
    ("group", "string"),
    ("assign", "boolean"),
    ("error", "string"),
]


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


class _Rows:
    """Column buffers per (kind, key): a kind fills only its own columns (a poll's values, the
    bulk of a history, fill 5 of 11); the others become null lists when a batch is made."""

    def __init__(self) -> None:
        self.chunks: dict[tuple, dict[str, list]] = {}
        self.count = 0

    def __call__(self, kind, key, idx, **fields):
        cols = self.chunks.get((kind, key))
        if cols is None:
            cols = self.chunks[(kind, key)] = {"idx": [], **{name: [] for name in fields}}
        cols["idx"].append(idx)
        for name, value in fields.items():
            cols[name].append(value)
        self.count += 1

    def batches(self):
        if self.chunks:
            yield chunk_batch(
                list(self.chunks), KEY_FIELDS, EVENT_FIELDS, list(self.chunks.values())
            )
        self.chunks, self.count = {}, 0


def scan(batches):
    """mapInArrow over (path, start, end) rows: the event rows of those byte ranges."""
    row = _Rows()
    for batch in batches:
        for path, start, end in zip(*(batch.column(i).to_pylist() for i in range(3))):
            yield from _scan_range(row, path, start, end)
    yield from row.batches()


def _scan_range(row, path: str, start: int, end: int):
    """One range's chunk rows: its whole lines through pyarrow's JSON reader, or, where that
    path cannot read them exactly (history_columns.Unfit), line by line into `row`. A torn
    last line always goes the per-line way, which skips it."""
    base, buf = _range_bytes(path, start, end)
    whole = buf[: buf.rfind(b"\n") + 1]
    found = Events()
    try:
        if whole:
            events(whole, base, found)
    except Unfit:
        for idx, line, torn in _split_lines(base, buf):
            _line(row, idx, line, torn)
            if row.count >= ROWS_PER_BATCH:
                yield from row.batches()
        return
    yield from _column_batches(found)
    if len(whole) < len(buf):
        _line(row, base + len(whole), buf[len(whole) :], torn=True)


def _range_bytes(path: str, start: int, end: int) -> tuple[int, bytes]:
    """(file offset, bytes) of the lines that start in [start, end): a line belongs to the
    range holding its first byte."""
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()
        base = f.tell()
        if base >= end:
            return base, b""
        buf = f.read(end - base)
        if not buf.endswith(b"\n"):
            buf += f.readline()
    return base, buf


def _split_lines(base: int, buf: bytes):
    """(file offset, line, is the file's torn last line) of each line of a _range_bytes buffer:
    only the file's last line can lack its newline there."""
    pos = 0
    while pos < len(buf):
        nl = buf.find(b"\n", pos)
        stop = len(buf) if nl < 0 else nl + 1
        yield base + pos, buf[pos:stop], nl < 0
        pos = stop


def _line(row, idx: int, line: bytes, torn: bool) -> None:
    """One line's event rows, or its error row."""
    if not line.strip():
        return
    try:
        doc = json.loads(line)
    except ValueError as exc:
        if not torn:  # a killed workload's torn last line is skipped (Jepsen)
            row("error", None, idx, error=f"not JSON ({exc})")
        return
    try:
        op = Op.from_json(doc)
    except (ValueError, TypeError) as exc:
        row("error", None, idx, error=str(exc))
        return
    _events(row, idx, op)


def _column_batches(found: Events):
    """Each kind's events from history_columns as chunk rows, as _Rows makes them: a chunk per
    key and at most ROWS_PER_BATCH events, its lists in file order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from chaos.audit.segments import arrow_schema

    types = arrow_schema(EVENT_FIELDS)
    for kind, parts in found.parts.items():
        key = pa.concat_arrays([_array(k, pa.string()) for k, _, _ in parts])
        idx = np.concatenate([i for _, i, _ in parts])
        # a reset's key is null: one run
        codes = pc.dictionary_encode(pc.fill_null(key, "")).indices.to_numpy()
        order = np.lexsort((idx, codes))
        key, idx, codes, n = key.take(order), idx[order], codes[order], len(idx)
        change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        runs = zip(np.concatenate(([0], change)), np.append(change, n))
        starts = np.concatenate([np.arange(lo, hi, ROWS_PER_BATCH) for lo, hi in runs])
        offsets = pa.array(np.append(starts, n), pa.int32())
        columns = [
            pa.array(np.full(len(starts), kind, dtype=object), pa.string()),
            key.take(pa.array(starts)),
        ]
        for field in types:
            if field.name == "idx":
                flat = pa.array(idx, pa.int64())
            elif field.name in parts[0][2]:
                flat = pa.concat_arrays(
                    [_array(p[field.name], field.type) for _, _, p in parts]
                ).take(order)
            else:  # a field the kind lacks: a null list, as chunk_batch makes it
                columns.append(pa.nulls(len(starts), pa.list_(field.type)))
                continue
            columns.append(pa.ListArray.from_arrays(offsets, flat))
        yield pa.RecordBatch.from_arrays(
            columns, names=[name for name, _ in KEY_FIELDS] + [f.name for f in types]
        )


def _array(values, kind):
    """A single Arrow array of `kind` from an array or a table's column."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.cast(kind) if values.type != kind else values


def _events(row, idx: int, op: Op) -> None:
    """The rows one op gives: what the history checks and the timeline read."""
    p = str(op.process)
    row("op", p, idx, process=p, type=op.type, f=op.f, time=op.time)
    if op.type == "invoke":
        return
    if op.f == "send":
        row(
            "send",
            op.partition,
            idx,
            process=p,
            type=op.type,
            value=_int(op.value),
            offset=op.offset,
        )
    elif op.type != "ok":
        return
    elif op.f in ("assign", "subscribe"):
        row("reset", None, idx, process=p, assign=op.f == "assign")
    elif op.f == "poll":
        for part in op.rebalanced:
            row("rebalance", part, idx, process=p)
        pos = 0
        for part, pairs in op.reads().items():
            for offset, value in pairs:
                row("read", part, idx, pos=pos, process=p, offset=offset, value=_int(value))
                pos += 1
    elif op.f == "commit":
        for part, o in op.commits().items():
            row("commit", part, idx, process=p, group=op.group or "", offset=o)


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
    """The scanned history's chunk rows, cached: the counts, the timeline and the checks read them."""

    def __init__(self, spark, path: str) -> None:
        from pyspark.sql import functions as F

        from chaos.audit.segments import ddl, list_fields

        path = os.path.abspath(path)
        ranges = plan_ranges(path, os.path.getsize(path), spark.sparkContext.defaultParallelism)
        rdd = spark.sparkContext.parallelize(ranges, len(ranges))
        ranges_df = spark.createDataFrame(rdd, "path string, start long, end long")
        self.events = ranges_df.mapInArrow(
            scan, ddl(KEY_FIELDS + list_fields(EVENT_FIELDS))
        ).cache()
        # a chunk's lists are in file order: its first idx is its first line
        first = F.element_at("idx", 1)
        counts = {
            r["kind"]: r
            for r in self.events.groupBy("kind")
            .agg(
                F.sum(F.size("idx")).alias("n"),
                F.min(first).alias("first_idx"),
                F.min_by(F.element_at("error", 1), first).alias("first_error"),
            )
            .collect()
        }
        if "error" in counts:
            self.events.unpersist()
            raise_first_error(path, counts["error"]["first_idx"], counts["error"]["first_error"])
        self.counts = {k: r["n"] for k, r in counts.items()}
        self.ops = self.events.filter(F.col("kind") == "op")

    def release(self) -> None:
        self.events.unpersist()


TIMELINE_FIELDS = [("f", "string"), ("b", "long"), ("n", "long"), ("ms", "array<double>")]


def _latencies(t0: int, bucket: float):
    """applyInArrow over one process's op chunks: per (f, time bucket) the latencies in ms of
    its ok completions that follow an invoke (its ops in history order)."""

    def run(table):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        idx = pc.list_flatten(table.column("idx")).to_numpy()
        order = np.argsort(idx, kind="stable")
        kind = pc.list_flatten(table.column("type")).to_numpy(zero_copy_only=False)[order]
        f = pc.list_flatten(table.column("f")).to_numpy(zero_copy_only=False)[order]
        time = pc.list_flatten(table.column("time")).to_numpy()[order]
        done = np.flatnonzero((kind[1:] == "ok") & (kind[:-1] == "invoke")) + 1
        b = np.floor((time[done] - t0) / bucket).astype(np.int64)
        ms = (time[done] - time[done - 1]) / 1e6
        groups: dict[tuple, list] = {}
        for key, m in zip(zip(f[done], b.tolist()), ms.tolist()):
            groups.setdefault(key, []).append(m)
        return pa.Table.from_pydict(
            {
                "f": [k[0] for k in groups],
                "b": [k[1] for k in groups],
                "n": [len(v) for v in groups.values()],
                "ms": list(groups.values()),
            },
            schema=pa.schema(
                [
                    ("f", pa.string()),
                    ("b", pa.int64()),
                    ("n", pa.int64()),
                    ("ms", pa.list_(pa.float64())),
                ]
            ),
        )

    return run


def timeline(ops, buckets: int = 100) -> tuple[dict, dict, float, int]:
    """Per f, ok completions per second and [p50, max] latency in ms per time bucket (about
    `buckets` over the run); an ok's latency pairs it with its process's invoke before it.
    Computed in the executors; the driver gets a few hundred numbers."""
    from pyspark.sql import functions as F

    from chaos.audit.segments import ddl

    span_row = ops.agg(
        F.min_by(F.element_at("time", 1), F.element_at("idx", 1)).alias("t0"),
        F.max(F.array_max("time")).alias("top"),
    ).collect()[0]
    if span_row["t0"] is None:
        return {}, {}, 1.0, 0
    t0 = span_row["t0"]
    span = span_row["top"] - t0 or 1
    bucket = max(span / buckets, 1e6)  # at least a millisecond, in ns
    # only what _latencies reads crosses the shuffle (not each op's process, its key already)
    done = (
        ops.select("key", "idx", "type", "f", "time")
        .groupBy("key")
        .applyInArrow(_latencies(t0, bucket), ddl(TIMELINE_FIELDS))
        .groupBy("f", "b")
        .agg(F.sum("n").alias("n"), F.sort_array(F.flatten(F.collect_list("ms"))).alias("ms"))
    )
    return *series(done, bucket), span / 1e9, t0


def series(done, bucket: float) -> tuple[dict, dict]:
    """(rate, latency) per f from the (f, b, n, ms sorted) rows of each f's time buckets."""
    from pyspark.sql import functions as F

    rows = done.select(
        "f",
        "b",
        "n",
        F.element_at("ms", (F.floor(F.size("ms") / 2) + 1).cast("int")).alias("p50"),
        F.array_max("ms").alias("max"),
    ).collect()
    rate, latency = {}, {}
    for r in sorted(rows, key=lambda r: (r["f"], r["b"])):
        t = r["b"] * bucket / 1e9
        rate.setdefault(r["f"], []).append((t, r["n"] / (bucket / 1e9)))
        latency.setdefault(r["f"], []).append((t, r["p50"], r["max"]))
    return rate, latency
