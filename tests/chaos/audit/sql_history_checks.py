"""The history checks and the timeline as they were computed before the per-partition pass:
Spark SQL joins, aggregates and windows over a row per event. Kept as the oracle the differential
test compares chaos/audit/partition_checks.py (and history_scan.timeline) against; not used by
the audit."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chaos.audit.history_scan import series
from chaos.audit.replica_checks import fmt, partition_name
from chaos.audit.segments import METADATA_TOPIC


def log_values(
    records: DataFrame | None, high_watermarks: DataFrame | None, sends: DataFrame, reads: DataFrame
) -> DataFrame | None:
    """(partition, offset, value, replica) of every record below its partition's final high
    watermark, in the partitions the history touches (other topics' records are not the
    workload's values)."""
    if records is None or high_watermarks is None:
        return None
    touched = sends.select("partition").unionByName(reads.select("partition")).distinct()
    return (
        records.filter(F.col("topic") != METADATA_TOPIC)
        .join(high_watermarks, ["topic", "partition"])
        .filter(F.col("offset") < F.col("high_watermark"))
        .select(partition_name().alias("partition"), "offset", "value", "replica")
        .join(touched, "partition", "left_semi")
    )


def _v(df, check, lo, hi, replicas, values: dict, message):
    return df.select(
        F.lit(check).alias("check"),
        F.col("partition"),
        lo.cast("long").alias("offset_lo"),
        hi.cast("long").alias("offset_hi"),
        replicas.cast("array<int>").alias("replicas"),
        F.to_json(F.struct(*[c.alias(k) for k, c in values.items()])).alias("values_json"),
        message.alias("message"),
    )


def _no_replicas():
    return F.array().cast("array<int>")


def check_history(
    sends: DataFrame,
    reads: DataFrame,
    commits: DataFrame,
    log: DataFrame | None,
    keep=lambda df: None,
) -> DataFrame:
    """Every history check as one frame of violations. The big inputs (every acknowledged send,
    polled value and log record) are shuffled once by (partition, offset) and once by
    (partition, value) and cached so (each is handed to `keep`, to unpersist after the audit):
    every check keyed by one of them reads that one shuffle, its answers hash-aggregated, not
    sorted. (Uncached, Spark pushes each check's filter below the shuffle and shuffles again.)"""
    acked = sends.filter(
        (F.col("type") == "ok") & F.col("offset").isNotNull() & F.col("value").isNotNull()
    )
    obs = acked.select(
        "partition", "offset", "value", F.lit("send").alias("source"), F.col("process").alias("who")
    ).unionByName(
        reads.filter(F.col("value").isNotNull()).select(
            "partition",
            "offset",
            "value",
            F.lit("poll").alias("source"),
            F.col("process").alias("who"),
        )
    )
    # Offsets known to hold a value, for poll-skip: also the log's records of other values.
    unvalued = None
    if log is not None:
        obs = obs.unionByName(
            log.filter(F.col("value").isNotNull()).select(
                "partition",
                "offset",
                "value",
                F.lit("log").alias("source"),
                F.col("replica").cast("string").alias("who"),
            )
        )
        unvalued = log.filter(F.col("value").isNull()).select(
            "partition",
            "offset",
            "value",
            F.lit("log").alias("source"),
            F.col("replica").cast("string").alias("who"),
        )
    by_offset = (
        (obs if unvalued is None else obs.unionByName(unvalued))
        .repartition("partition", "offset")
        .cache()
    )
    keep(by_offset)
    out, index = _offset_checks(by_offset)
    failed = sends.filter((F.col("type") == "fail") & F.col("value").isNotNull()).select(
        "partition",
        F.lit(None).cast("long").alias("offset"),
        "value",
        F.lit("fail").alias("source"),
        F.col("process").alias("who"),
    )
    by_value = obs.unionByName(failed).repartition("partition", "value").cache()
    keep(by_value)
    out = out.unionByName(_value_checks(by_value, reads, log))
    # nonmonotonic-send: one process's acknowledged offsets in a partition must rise
    ws = Window.partitionBy("process", "partition").orderBy("idx")
    back = (
        acked.withColumn("prev_offset", F.lag("offset").over(ws))
        .withColumn("prev_value", F.lag("value").over(ws))
        .filter(F.col("offset") <= F.col("prev_offset"))
    )
    out = out.unionByName(
        _v(
            back,
            "nonmonotonic-send",
            F.col("prev_offset"),
            F.col("offset"),
            _no_replicas(),
            {"process": F.col("process"), "values": F.array("prev_value", "value")},
            fmt(
                "process %s sent %d then %d, acknowledged at offsets %d then %d",
                "process",
                "prev_value",
                "value",
                "prev_offset",
                "offset",
            ),
        )
    )

    # nonmonotonic-poll and poll-skip: one consumer's successive positions in a partition
    # (`reads` is partitioned by process already: this window shuffles nothing).
    wp = Window.partitionBy("process", "partition", "session").orderBy("idx", "pos")
    seq = reads.withColumn("prev_offset", F.lag("offset").over(wp))
    nonmono = seq.filter(F.col("offset") <= F.col("prev_offset"))
    out = out.unionByName(
        _v(
            nonmono,
            "nonmonotonic-poll",
            F.col("prev_offset"),
            F.col("offset"),
            _no_replicas(),
            {"process": F.col("process")},
            fmt("process %s polled offset %d after offset %d", "process", "offset", "prev_offset"),
        )
    )
    # A skip is a step over offsets known to hold values: only a step of more than one offset can
    # be one, so only those steps look up the ranks of their two offsets.
    steps = seq.filter(F.col("assign") & (F.col("offset") > F.col("prev_offset") + 1))
    skip = (
        steps.join(index, ["partition", "offset"], "left")
        .join(
            index.select(
                "partition", F.col("offset").alias("prev_offset"), F.col("i").alias("prev_i")
            ),
            ["partition", "prev_offset"],
            "left",
        )
        .filter(F.col("i") - F.col("prev_i") > 1)
    )
    out = out.unionByName(
        _v(
            skip,
            "poll-skip",
            F.col("prev_offset"),
            F.col("offset"),
            _no_replicas(),
            {"process": F.col("process"), "skipped": F.col("i") - F.col("prev_i") - 1},
            fmt(
                "process %s polled offset %d right after offset %d, skipping %d offsets known to "
                "hold values",
                "process",
                "offset",
                "prev_offset",
                F.col("i") - F.col("prev_i") - 1,
            ),
        )
    )

    # commit-backwards: a group's committed offset per partition never decreases
    wc = Window.partitionBy("group", "partition").orderBy("idx")
    cb = (
        commits.withColumn("prev_offset", F.lag("offset").over(wc))
        .withColumn("prev_process", F.lag("process").over(wc))
        .filter(F.col("offset") < F.col("prev_offset"))
    )
    return out.unionByName(
        _v(
            cb,
            "commit-backwards",
            F.col("offset"),
            F.col("prev_offset"),
            _no_replicas(),
            {
                "group": F.col("group"),
                "process": F.col("process"),
                "previous_process": F.col("prev_process"),
            },
            fmt(
                "group '%s' committed offset %d (process %s) after %d (process %s)",
                "group",
                "offset",
                "process",
                "prev_offset",
                "prev_process",
            ),
        )
    )


def _offset_checks(by_offset: DataFrame) -> tuple[DataFrame, DataFrame]:
    """inconsistent-offsets (one offset, several values) over the rows shuffled by (partition,
    offset), and the index of the offsets known to hold something: (partition, offset, i), i the
    offset's rank in its partition."""
    per_offset = by_offset.groupBy("partition", "offset").agg(
        F.min("value").alias("a"), F.max("value").alias("b")
    )
    # Cheap bounds find the offsets; who saw which value is gathered for those alone.
    bad = per_offset.filter(F.col("a") != F.col("b")).select("partition", "offset")
    who = F.concat_ws(":", "source", "who")
    by_value = (
        by_offset.filter(F.col("value").isNotNull())
        .join(bad.hint("shuffle_hash"), ["partition", "offset"], "left_semi")
        .groupBy("partition", "offset", "value")
        .agg(
            F.sort_array(F.collect_set(who)).alias("seen_by"),
            F.collect_set(_log_replica()).alias("reps"),
        )
    )
    multi = (
        by_value.groupBy("partition", "offset")
        .agg(
            F.sort_array(F.collect_list(F.struct("value", "seen_by"))).alias("values"),
            F.flatten(F.collect_list("reps")).alias("reps"),
        )
        .filter(F.size("values") > 1)
    )
    out = _v(
        multi,
        "inconsistent-offsets",
        F.col("offset"),
        F.col("offset"),
        F.array_distinct("reps"),
        {"values": F.col("values")},
        F.concat(
            fmt("offset %d holds %d values: ", "offset", F.size("values")),
            F.array_join(
                F.transform(
                    "values",
                    lambda x: F.concat(
                        x["value"].cast("string"),
                        F.lit(" ("),
                        F.array_join(x["seen_by"], ", "),
                        F.lit(")"),
                    ),
                ),
                "; ",
            ),
        ),
    )
    index = per_offset.select(
        "partition",
        "offset",
        F.dense_rank().over(Window.partitionBy("partition").orderBy("offset")).alias("i"),
    )
    return out, index


def _log_replica():
    return F.when(F.col("source") == "log", F.col("who").cast("int"))


def _value_checks(by_value: DataFrame, reads: DataFrame, log: DataFrame | None) -> DataFrame:
    """duplicate, lost-write, unseen and aborted-read over the rows shuffled by (partition,
    value): acknowledged sends, polled and logged values, and failed sends (offset null)."""
    source = F.col("source")
    per_value = by_value.groupBy("partition", "value").agg(
        F.min("offset").alias("lo"),
        F.max("offset").alias("hi"),
        F.max(source == "poll").alias("polled"),
        F.max(source == "log").alias("in_log"),
        F.max(source == "fail").alias("failed"),
    )

    # duplicate: one value, several offsets (found the same way as inconsistent offsets)
    bad = per_value.filter(F.col("lo") != F.col("hi")).select("partition", "value")
    dup = (
        by_value.filter(source != "fail")
        .join(bad.hint("shuffle_hash"), ["partition", "value"], "left_semi")
        .groupBy("partition", "value")
        .agg(
            F.sort_array(F.collect_set("offset")).alias("offsets"),
            F.array_distinct(F.collect_list(_log_replica())).alias("reps"),
        )
        .filter(F.size("offsets") > 1)
    )
    out = _v(
        dup,
        "duplicate",
        F.array_min("offsets"),
        F.array_max("offsets"),
        F.col("reps"),
        {"value": F.col("value"), "offsets": F.col("offsets")},
        fmt("value %d appears at offsets %s", "value", F.array_join("offsets", ", ")),
    )

    # lost-write and unseen: acknowledged sends nobody polled
    unpolled = per_value.filter(~F.col("polled")).select("partition", "value", "in_log")
    not_polled = (
        by_value.filter(source == "send")
        .select("partition", "value", "offset", F.col("who").alias("process"))
        .join(unpolled.hint("shuffle_hash"), ["partition", "value"])
    )
    bound = reads.groupBy("partition").agg(F.max("offset").alias("max_polled"))
    if log is not None:
        bound = bound.join(
            log.groupBy("partition").agg(F.max("offset").alias("log_top")),
            "partition",
            "full_outer",
        )
    else:
        bound = bound.withColumn("log_top", F.lit(None).cast("long"))
    in_log = F.col("in_log")
    judged = (
        not_polled.join(bound, "partition", "left")
        .withColumn("reach", F.greatest("max_polled", "log_top"))
        .withColumn("lost", F.coalesce(~in_log & (F.col("offset") <= F.col("reach")), F.lit(False)))
    )
    out = out.unionByName(
        _v(
            judged.filter("lost"),
            "lost-write",
            F.col("offset"),
            F.col("offset"),
            _no_replicas(),
            {
                "value": F.col("value"),
                "process": F.col("process"),
                "max_polled": F.col("max_polled"),
                "log_top": F.col("log_top"),
            },
            fmt(
                "value %d acknowledged at offset %d (process %s) is in no poll and not in the log, "
                "though polls or the log reach offset %d",
                "value",
                "offset",
                "process",
                "reach",
            ),
        )
    )
    out = out.unionByName(
        _v(
            judged.filter(~F.col("lost")),
            "unseen",
            F.col("offset"),
            F.col("offset"),
            _no_replicas(),
            {"value": F.col("value"), "process": F.col("process"), "in_log": in_log},
            F.concat(
                fmt(
                    "value %d acknowledged at offset %d (process %s) was never polled",
                    "value",
                    "offset",
                    "process",
                ),
                F.when(in_log, F.lit(" (it is in the log)")).otherwise(F.lit("")),
            ),
        )
    )

    # aborted-read (G1a): a poll saw a value whose send failed
    both = per_value.filter(F.col("failed") & F.col("polled")).select("partition", "value")
    seen = by_value.filter(source == "poll").join(
        both.hint("shuffle_hash"), ["partition", "value"], "left_semi"
    )
    failed = by_value.filter(source == "fail").join(
        both.hint("shuffle_hash"), ["partition", "value"], "left_semi"
    )
    aborted = seen.select("partition", "value", "offset", F.col("who").alias("process")).join(
        failed.select("partition", "value", F.col("who").alias("writer")), ["partition", "value"]
    )
    return out.unionByName(
        _v(
            aborted,
            "aborted-read",
            F.col("offset"),
            F.col("offset"),
            _no_replicas(),
            {"value": F.col("value"), "reader": F.col("process"), "writer": F.col("writer")},
            fmt(
                "process %s polled value %d at offset %d, but its send (process %s) failed",
                "process",
                "value",
                "offset",
                "writer",
            ),
        )
    )


def sessions(ev):
    """Each polled value with its consumer's position session, as Jepsen's checker needs: it
    changes on the process's assign/subscribe and, per partition, on a poll's `rebalanced`
    (counted before that poll's values); `assign` says the last reset was an assign. One shuffle
    by process serves both windows and the checks' per-consumer windows after it."""
    kind = F.col("kind")
    rows = (
        ev.filter(kind.isin("read", "reset", "rebalance"))
        .withColumn("pos", F.when(kind == "rebalance", F.lit(-1)).otherwise(F.col("pos")))
        .repartition("process")
    )
    upto = (
        Window.partitionBy("process")
        .orderBy("idx", "pos")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    # A reset has no partition: it sits in a window of its own below, where nothing counts it.
    upto_part = (
        Window.partitionBy("process", "partition")
        .orderBy("idx", "pos")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        rows.withColumn("resets", F.sum((kind == "reset").cast("int")).over(upto))
        .withColumn(
            "mode", F.last(F.when(kind == "reset", F.col("assign")), ignorenulls=True).over(upto)
        )
        .withColumn("rebalances", F.sum((kind == "rebalance").cast("int")).over(upto_part))
        .filter(kind == "read")
        .select(
            "idx",
            "pos",
            "process",
            "partition",
            "offset",
            "value",
            F.concat_ws(".", "resets", "rebalances").alias("session"),
            F.coalesce("mode", F.lit(False)).alias("assign"),
        )
    )


def timeline(ops, buckets: int = 100) -> tuple[dict, dict, float, int]:
    """Per f, ok completions per second and [p50, max] latency in ms per time bucket (about
    `buckets` over the run); an ok's latency pairs it with its process's invoke before it.
    Computed in the executors; the driver gets a few hundred numbers."""
    span_row = ops.agg(F.min_by("time", "idx").alias("t0"), F.max("time").alias("top")).collect()[0]
    if span_row["t0"] is None:
        return {}, {}, 1.0, 0
    t0 = span_row["t0"]
    span = span_row["top"] - t0 or 1
    bucket = max(span / buckets, 1e6)  # at least a millisecond, in ns
    w = Window.partitionBy("process").orderBy("idx")
    done = (
        ops.withColumn("prev_type", F.lag("type").over(w))
        .withColumn("prev_time", F.lag("time").over(w))
        .filter((F.col("type") == "ok") & (F.col("prev_type") == "invoke"))
        .withColumn("b", F.floor((F.col("time") - t0) / bucket).cast("long"))
        .withColumn("ms", (F.col("time") - F.col("prev_time")) / 1e6)
        .groupBy("f", "b")
        .agg(F.count("*").alias("n"), F.sort_array(F.collect_list("ms")).alias("ms"))
    )
    return (*series(done, bucket), span / 1e9, t0)
