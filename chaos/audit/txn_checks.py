"""Jepsen's transactional anomalies over the transactional workload's history
(chaos/txn_workload.py writes `txn_history.jsonl`), read and checked in the executors.

What each check proves is in chaos/audit/checks.py (CHECKS, the `txn-` names). An output value
is "<txn id>/<input partition>:<input offset>:<input value>", so every output record names the
transaction that wrote it and the input record it came from.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from chaos.audit.replica_checks import fmt

_TXN = (
    "struct<id:string, reads:map<string,array<long>>, writes:map<string,array<string>>, "
    "commit_at:long>"
)
_READS = "map<string,array<array<string>>>"
_COMMITTED = "map<string,long>"
VIOLATION_FIELDS = (
    "check",
    "partition",
    "offset_lo",
    "offset_hi",
    "replicas",
    "values_json",
    "message",
)


def read_txn_history(spark: SparkSession, path: str) -> DataFrame:
    """One row per line: process, type, f, time and the raw line (parsed per f below)."""
    lines = spark.read.text(path).filter(F.length(F.trim("value")) > 0)
    head = F.from_json("value", "process string, type string, f string, time long")
    return lines.select(head.alias("h"), F.col("value").alias("line")).select("h.*", "line")


def _reads(ops: DataFrame, f: str) -> DataFrame:
    """(process, time, partition, offset, value, txn, source) of every record a read returned."""
    value = F.from_json(F.get_json_object("line", "$.value"), _READS)
    return (
        ops.filter((F.col("f") == f) & (F.col("type") == "ok"))
        .select("process", "time", F.explode(value).alias("partition", "pairs"))
        .select("process", "time", "partition", F.explode("pairs").alias("pair"))
        .select(
            "process",
            "time",
            "partition",
            F.col("pair")[0].cast("long").alias("offset"),
            F.col("pair")[1].alias("value"),
        )
        .withColumn("txn", F.substring_index("value", "/", 1))
        .withColumn("source", F.lit(f))
    )


def _input_of(value):
    """'in-p:offset' of an output value '<txn>/<p>:<offset>:<v>'."""
    rest = F.substring_index(value, "/", -1)
    return F.concat_ws(
        ":",
        F.substring_index(rest, ":", 1),
        F.substring_index(F.substring_index(rest, ":", 2), ":", -1),
    )


def _v(df, check, partition, lo, hi, values: dict, message):
    return df.select(
        F.lit(check).alias("check"),
        partition.alias("partition"),
        lo.cast("long").alias("offset_lo"),
        hi.cast("long").alias("offset_hi"),
        F.array().cast("array<int>").alias("replicas"),
        F.to_json(F.struct(*[c.alias(k) for k, c in values.items()])).alias("values_json"),
        message.alias("message"),
    )


def check_transactions(ops: DataFrame, in_topic: str) -> DataFrame:
    """Every transactional violation, in the audit's violation row shape."""
    txn = F.from_json(F.get_json_object("line", "$.value"), _TXN)
    ends = (
        ops.filter((F.col("f") == "txn") & (F.col("type") != "invoke"))
        .select(F.col("process").alias("writer"), F.col("type").alias("outcome"), txn.alias("t"))
        .select(
            "writer",
            "outcome",
            F.col("t.id").alias("txn"),
            F.col("t.writes").alias("writes"),
            F.col("t.commit_at").alias("commit_at"),
        )
    )
    polls = _reads(ops, "poll")
    out_drain = _reads(ops, "drain-out")
    seen = polls.unionByName(out_drain)

    # aborted read (G1a): a read_committed read returned a write of a transaction that was
    # aborted, or that never asked to commit (its client failed before commit_transaction).
    aborted = ends.filter(
        (F.col("outcome") == "fail") | ((F.col("outcome") == "info") & F.col("commit_at").isNull())
    )
    g1a = seen.join(aborted.select("txn", "writer", "outcome"), "txn")
    out = _v(
        g1a,
        "txn-aborted-read",
        F.col("partition"),
        F.col("offset"),
        F.col("offset"),
        {"txn": F.col("txn"), "reader": F.col("process"), "outcome": F.col("outcome")},
        fmt(
            "%s read offset %d of transaction %s, which was %s",
            "process",
            "offset",
            "txn",
            F.when(F.col("outcome") == "fail", "aborted").otherwise(
                "never committed (its client failed before commit)"
            ),
        ),
    )

    # intermediate read (G1b, here: read past the last stable offset): a read_committed poll
    # returned a write before its transaction was even asked to commit.
    early = polls.join(
        ends.filter(F.col("commit_at").isNotNull()).select("txn", "commit_at"), "txn"
    ).filter(F.col("time") < F.col("commit_at"))
    out = out.unionByName(
        _v(
            early,
            "txn-intermediate-read",
            F.col("partition"),
            F.col("offset"),
            F.col("offset"),
            {
                "txn": F.col("txn"),
                "reader": F.col("process"),
                "read_ns": F.col("time"),
                "commit_at_ns": F.col("commit_at"),
            },
            fmt(
                "%s read offset %d of transaction %s %d ms before the transaction asked to commit",
                "process",
                "offset",
                "txn",
                ((F.col("commit_at") - F.col("time")) / 1e6).cast("long"),
            ),
        )
    )

    # duplicate across transactions: one input record transformed by more than one transaction
    # in the committed output (exactly-once broken).
    by_input = out_drain.withColumn("input", _input_of("value"))
    dup = (
        by_input.groupBy("input")
        .agg(
            F.sort_array(F.collect_set("txn")).alias("txns"),
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            F.first("partition").alias("partition"),
        )
        .filter(F.size("txns") > 1)
    )
    out = out.unionByName(
        _v(
            dup,
            "txn-duplicate",
            F.col("partition"),
            F.col("lo"),
            F.col("hi"),
            {"input": F.col("input"), "txns": F.col("txns")},
            fmt(
                "input %s-%s is in the committed output %d times, by transactions %s",
                F.lit(in_topic),
                "input",
                F.size("txns"),
                F.array_join("txns", ", "),
            ),
        )
    )

    # lost across transactions: an input record below the group's final committed offset whose
    # transformation is in no committed output.
    committed = ops.filter(F.col("f") == "committed").select(
        F.explode(F.from_json(F.get_json_object("line", "$.value"), _COMMITTED)).alias(
            "partition", "committed"
        )
    )
    inputs = _reads(ops, "drain-in").select(
        "partition",
        "offset",
        F.concat_ws(
            ":", F.substring_index("partition", "-", -1), F.col("offset").cast("string")
        ).alias("input"),
    )
    lost = (
        inputs.join(committed, "partition")
        .filter(F.col("offset") < F.col("committed"))
        .join(by_input.select("input"), "input", "left_anti")
    )
    out = out.unionByName(
        _v(
            lost,
            "txn-lost",
            F.col("partition"),
            F.col("offset"),
            F.col("offset"),
            {"committed": F.col("committed")},
            fmt(
                "input offset %d of %s is below the group's committed offset %d but no committed "
                "transaction's output holds it",
                "offset",
                "partition",
                "committed",
            ),
        )
    )

    # all or nothing: per transaction and output partition, the committed output holds all of
    # its writes (it committed) or none (it aborted); an acknowledged commit holds all.
    wrote = ends.select("txn", "outcome", F.explode("writes").alias("partition", "values")).select(
        "txn", "outcome", "partition", F.size("values").alias("written")
    )
    found = out_drain.groupBy("txn", "partition").agg(
        F.count("*").alias("found"), F.min("offset").alias("lo"), F.max("offset").alias("hi")
    )
    partial = (
        wrote.join(found, ["txn", "partition"], "left")
        .withColumn("found", F.coalesce("found", F.lit(0)))
        .filter(
            ((F.col("found") > 0) & (F.col("found") != F.col("written")))
            | ((F.col("outcome") == "ok") & (F.col("found") == 0))
        )
    )
    return out.unionByName(
        _v(
            partial,
            "txn-partial",
            F.col("partition"),
            F.col("lo"),
            F.col("hi"),
            {
                "txn": F.col("txn"),
                "outcome": F.col("outcome"),
                "written": F.col("written"),
                "found": F.col("found"),
            },
            fmt(
                "transaction %s (%s) wrote %d records here; the committed output holds %d",
                "txn",
                "outcome",
                "written",
                "found",
            ),
        )
    )
