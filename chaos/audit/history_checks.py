"""Jepsen's Kafka anomalies (jepsen/tests/kafka.clj, checked our own way) as Spark DataFrames over
the history, plus the values the replica logs hold below their high watermark."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from chaos.audit.replica_checks import fmt, partition_name
from chaos.audit.segments import METADATA_TOPIC, arrow_schema

SEND_FIELDS = [("idx", "long"), ("process", "string"), ("type", "string"), ("partition", "string"),
               ("value", "long"), ("offset", "long")]
READ_FIELDS = [("idx", "long"), ("pos", "int"), ("process", "string"), ("partition", "string"),
               ("offset", "long"), ("value", "long"), ("session", "string"), ("assign", "boolean")]
COMMIT_FIELDS = [("idx", "long"), ("process", "string"), ("group", "string"),
                 ("partition", "string"), ("offset", "long")]


def frame(spark: SparkSession, rows, fields) -> DataFrame:
    """Driver rows to a DataFrame through Arrow (far faster than Spark's row-by-row path)."""
    import pyarrow as pa

    schema = arrow_schema(fields)
    columns = list(zip(*rows)) if rows else [[] for _ in fields]
    table = pa.Table.from_arrays([pa.array(c, type=schema.field(i).type)
                                  for i, c in enumerate(columns)], schema=schema)
    return spark.createDataFrame(table)


def log_values(records: DataFrame | None, high_watermarks: DataFrame | None,
               sends: DataFrame, reads: DataFrame) -> DataFrame | None:
    """(partition, offset, value, replica) of every record below its partition's final high
    watermark, in the partitions the history touches (other topics' records are not the
    workload's values)."""
    if records is None or high_watermarks is None:
        return None
    touched = sends.select("partition").unionByName(reads.select("partition")).distinct()
    return (records.filter(F.col("topic") != METADATA_TOPIC)
            .join(high_watermarks, ["topic", "partition"])
            .filter(F.col("offset") < F.col("high_watermark"))
            .select(partition_name().alias("partition"), "offset", "value", "replica")
            .join(touched, "partition", "left_semi"))


def _v(df, check, lo, hi, replicas, values: dict, message):
    return df.select(F.lit(check).alias("check"), F.col("partition"),
                     lo.cast("long").alias("offset_lo"), hi.cast("long").alias("offset_hi"),
                     replicas.cast("array<int>").alias("replicas"),
                     F.to_json(F.struct(*[c.alias(k) for k, c in values.items()])).alias("values_json"),
                     message.alias("message"))


def _no_replicas():
    return F.array().cast("array<int>")


def check_history(sends: DataFrame, reads: DataFrame, commits: DataFrame,
                  log: DataFrame | None) -> DataFrame:
    acked = sends.filter((F.col("type") == "ok") & F.col("offset").isNotNull()
                         & F.col("value").isNotNull())
    obs = (acked.select("partition", "offset", "value", F.lit("send").alias("source"),
                        F.col("process").alias("who"))
           .unionByName(reads.filter(F.col("value").isNotNull()).select(
               "partition", "offset", "value", F.lit("poll").alias("source"),
               F.col("process").alias("who"))))
    offsets = obs.select("partition", "offset")
    if log is not None:
        obs = obs.unionByName(log.filter(F.col("value").isNotNull()).select(
            "partition", "offset", "value", F.lit("log").alias("source"),
            F.col("replica").cast("string").alias("who")))
        offsets = offsets.unionByName(log.select("partition", "offset"))
    who = F.concat_ws(":", "source", "who")
    log_replicas = F.when(F.col("source") == "log", F.col("who").cast("int"))

    # inconsistent-offsets: one offset, several values. Cheap bounds find the offsets; who saw
    # which value is gathered for those alone.
    bad = (obs.groupBy("partition", "offset")
           .agg(F.min("value").alias("a"), F.max("value").alias("b"))
           .filter(F.col("a") != F.col("b")).select("partition", "offset"))
    by_value = obs.join(bad, ["partition", "offset"], "left_semi") \
        .groupBy("partition", "offset", "value").agg(
        F.sort_array(F.collect_set(who)).alias("seen_by"),
        F.collect_set(log_replicas).alias("reps"))
    multi = by_value.groupBy("partition", "offset").agg(
        F.sort_array(F.collect_list(F.struct("value", "seen_by"))).alias("values"),
        F.flatten(F.collect_list("reps")).alias("reps")).filter(F.size("values") > 1)
    out = _v(multi, "inconsistent-offsets", F.col("offset"), F.col("offset"),
             F.array_distinct("reps"), {"values": F.col("values")},
             F.concat(fmt("offset %d holds %d values: ", "offset", F.size("values")),
                      F.array_join(F.transform("values", lambda x: F.concat(
                          x["value"].cast("string"), F.lit(" ("),
                          F.array_join(x["seen_by"], ", "), F.lit(")"))), "; ")))

    # duplicate: one value, several offsets (found the same way)
    bad = (obs.groupBy("partition", "value")
           .agg(F.min("offset").alias("a"), F.max("offset").alias("b"))
           .filter(F.col("a") != F.col("b")).select("partition", "value"))
    dup = obs.join(bad, ["partition", "value"], "left_semi").groupBy("partition", "value").agg(
        F.sort_array(F.collect_set("offset")).alias("offsets"),
        F.array_distinct(F.collect_list(log_replicas)).alias("reps")).filter(F.size("offsets") > 1)
    out = out.unionByName(_v(dup, "duplicate", F.array_min("offsets"), F.array_max("offsets"),
                             F.col("reps"), {"value": F.col("value"), "offsets": F.col("offsets")},
                             fmt("value %d appears at offsets %s", "value",
                                 F.array_join("offsets", ", "))))

    # lost-write and unseen: acknowledged sends nobody polled
    polled = reads.select("partition", "value").distinct()
    not_polled = acked.join(polled, ["partition", "value"], "left_anti")
    bound = reads.groupBy("partition").agg(F.max("offset").alias("max_polled"))
    in_log = F.lit(False)
    if log is not None:
        in_log_df = log.select("partition", "value").distinct().withColumn("in_log", F.lit(True))
        not_polled = not_polled.join(in_log_df, ["partition", "value"], "left")
        hw = log.groupBy("partition").agg(F.max("offset").alias("log_top"))
        bound = bound.join(hw, "partition", "full_outer")
        in_log = F.coalesce(F.col("in_log"), F.lit(False))
    else:
        bound = bound.withColumn("log_top", F.lit(None).cast("long"))
    judged = (not_polled.join(bound, "partition", "left")
              .withColumn("reach", F.greatest("max_polled", "log_top"))
              .withColumn("lost", F.coalesce(~in_log & (F.col("offset") <= F.col("reach")),
                                             F.lit(False))))
    lost = judged.filter("lost")
    out = out.unionByName(_v(
        lost, "lost-write", F.col("offset"), F.col("offset"), _no_replicas(),
        {"value": F.col("value"), "process": F.col("process"), "max_polled": F.col("max_polled"),
         "log_top": F.col("log_top")},
        fmt("value %d acknowledged at offset %d (process %s) is in no poll and not in the log, "
            "though polls or the log reach offset %d", "value", "offset", "process", "reach")))
    unseen = judged.filter(~F.col("lost"))
    out = out.unionByName(_v(
        unseen, "unseen", F.col("offset"), F.col("offset"), _no_replicas(),
        {"value": F.col("value"), "process": F.col("process"), "in_log": in_log},
        F.concat(fmt("value %d acknowledged at offset %d (process %s) was never polled",
                     "value", "offset", "process"),
                 F.when(in_log, F.lit(" (it is in the log)")).otherwise(F.lit("")))))

    # aborted-read (G1a): a poll saw a value whose send failed
    failed = sends.filter(F.col("type") == "fail").select(
        "partition", "value", F.col("process").alias("writer"))
    aborted = reads.join(failed, ["partition", "value"])
    out = out.unionByName(_v(
        aborted, "aborted-read", F.col("offset"), F.col("offset"), _no_replicas(),
        {"value": F.col("value"), "reader": F.col("process"), "writer": F.col("writer")},
        fmt("process %s polled value %d at offset %d, but its send (process %s) failed",
            "process", "value", "offset", "writer")))

    # nonmonotonic-send: one process's acknowledged offsets in a partition must rise
    ws = Window.partitionBy("process", "partition").orderBy("idx")
    back = (acked.withColumn("prev_offset", F.lag("offset").over(ws))
            .withColumn("prev_value", F.lag("value").over(ws))
            .filter(F.col("offset") <= F.col("prev_offset")))
    out = out.unionByName(_v(
        back, "nonmonotonic-send", F.col("prev_offset"), F.col("offset"), _no_replicas(),
        {"process": F.col("process"), "values": F.array("prev_value", "value")},
        fmt("process %s sent %d then %d, acknowledged at offsets %d then %d", "process",
            "prev_value", "value", "prev_offset", "offset")))

    # nonmonotonic-poll and poll-skip: one consumer's successive positions in a partition
    wp = Window.partitionBy("process", "partition", "session").orderBy("idx", "pos")
    index = (offsets.distinct().withColumn(
        "i", F.dense_rank().over(Window.partitionBy("partition").orderBy("offset"))))
    seq = (reads.join(index, ["partition", "offset"], "left")
           .withColumn("prev_offset", F.lag("offset").over(wp))
           .withColumn("prev_i", F.lag("i").over(wp)))
    nonmono = seq.filter(F.col("offset") <= F.col("prev_offset"))
    out = out.unionByName(_v(
        nonmono, "nonmonotonic-poll", F.col("prev_offset"), F.col("offset"), _no_replicas(),
        {"process": F.col("process")},
        fmt("process %s polled offset %d after offset %d", "process", "offset", "prev_offset")))
    skip = seq.filter(F.col("assign") & (F.col("offset") > F.col("prev_offset"))
                      & (F.col("i") - F.col("prev_i") > 1))
    out = out.unionByName(_v(
        skip, "poll-skip", F.col("prev_offset"), F.col("offset"), _no_replicas(),
        {"process": F.col("process"), "skipped": F.col("i") - F.col("prev_i") - 1},
        fmt("process %s polled offset %d right after offset %d, skipping %d offsets known to "
            "hold values", "process", "offset", "prev_offset", F.col("i") - F.col("prev_i") - 1)))

    # commit-backwards: a group's committed offset per partition never decreases
    wc = Window.partitionBy("group", "partition").orderBy("idx")
    cb = (commits.withColumn("prev_offset", F.lag("offset").over(wc))
          .withColumn("prev_process", F.lag("process").over(wc))
          .filter(F.col("offset") < F.col("prev_offset")))
    return out.unionByName(_v(
        cb, "commit-backwards", F.col("offset"), F.col("prev_offset"), _no_replicas(),
        {"group": F.col("group"), "process": F.col("process"), "previous_process": F.col("prev_process")},
        fmt("group '%s' committed offset %d (process %s) after %d (process %s)", "group",
            "offset", "process", "prev_offset", "prev_process")))
