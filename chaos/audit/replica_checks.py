"""Checks of the replicas' segment files as Spark DataFrames over the batch rows (segments.py):
integrity, offset and epoch order, epoch checkpoints, replica divergence, epoch assignment and
producer sequences. Each returns violations in VIOLATION_COLUMNS' shape."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from chaos.audit.segments import METADATA_TOPIC

VIOLATION_COLUMNS = [
    "check",
    "partition",
    "offset_lo",
    "offset_hi",
    "replicas",
    "values_json",
    "message",
]
REPLICA_KEY = ["replica", "topic", "partition"]
SEQUENCE_SPACE = 2**31  # Kafka's producer sequences wrap from INT_MAX to 0


def partition_name():
    return F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"))


def violations(df: DataFrame, check: str, lo, hi, replicas, values: dict, message) -> DataFrame:
    """Project `df` onto the common violation shape; `values` become one JSON object."""
    return df.select(
        F.lit(check).alias("check"),
        partition_name().alias("partition"),
        lo.cast("long").alias("offset_lo"),
        hi.cast("long").alias("offset_hi"),
        replicas.cast("array<int>").alias("replicas"),
        F.to_json(F.struct(*[c.alias(k) for k, c in values.items()])).alias("values_json"),
        message.alias("message"),
    )


def fmt(pattern: str, *cols):
    return F.format_string(pattern, *cols)


def integrity(batches: DataFrame) -> DataFrame:
    bad = batches.filter(F.col("problem_kind").isin("corrupt", "index", "records"))
    return violations(
        bad,
        "batch-integrity",
        F.col("base_offset"),
        F.col("last_offset"),
        F.array("replica"),
        {"segment": F.col("segment"), "position": F.col("position"), "kind": F.col("problem_kind")},
        fmt("replica %d: %s", "replica", "problem"),
    )


def damaged(batches: DataFrame) -> DataFrame:
    """Replica logs with an unreadable batch: reported once, under batch-integrity; their order,
    checkpoint and sequence checks would only echo the bytes they could not read."""
    return batches.filter(F.col("problem_kind") == "corrupt").select(*REPLICA_KEY).distinct()


def order(valid: DataFrame, damaged_logs: DataFrame, compacted: list[str]) -> DataFrame:
    w = Window.partitionBy(*REPLICA_KEY).orderBy("segment", "position")
    df = (
        valid.join(damaged_logs, REPLICA_KEY, "left_anti")
        .withColumn("prev_last", F.lag("last_offset").over(w))
        .withColumn("prev_epoch", F.lag("epoch").over(w))
    )
    overlap = df.filter(F.col("base_offset") <= F.col("prev_last"))
    gap = df.filter(
        (F.col("base_offset") > F.col("prev_last") + 1) & ~F.col("topic").isin(compacted)
    )
    below = df.filter(F.col("base_offset") < F.col("segment"))
    back = df.filter((F.col("epoch") < F.col("prev_epoch")) & (F.col("epoch") >= 0))
    where = {"segment": F.col("segment"), "position": F.col("position")}
    return (
        violations(
            overlap,
            "offset-order",
            F.col("base_offset"),
            F.col("last_offset"),
            F.array("replica"),
            {**where, "previous_last_offset": F.col("prev_last")},
            fmt(
                "replica %d: batch %d-%d overlaps the previous batch, which ends at %d",
                "replica",
                "base_offset",
                "last_offset",
                "prev_last",
            ),
        )
        .unionByName(
            violations(
                gap,
                "offset-order",
                F.col("prev_last") + 1,
                F.col("base_offset") - 1,
                F.array("replica"),
                {**where, "next_batch": F.col("base_offset")},
                fmt(
                    "replica %d: offsets %d-%d are missing between two batches",
                    "replica",
                    F.col("prev_last") + 1,
                    F.col("base_offset") - 1,
                ),
            )
        )
        .unionByName(
            violations(
                below,
                "offset-order",
                F.col("base_offset"),
                F.col("last_offset"),
                F.array("replica"),
                where,
                fmt(
                    "replica %d: batch %d is below its segment's base offset %d",
                    "replica",
                    "base_offset",
                    "segment",
                ),
            )
        )
        .unionByName(
            violations(
                back,
                "leader-epoch-order",
                F.col("base_offset"),
                F.col("last_offset"),
                F.array("replica"),
                {**where, "epoch": F.col("epoch"), "previous_epoch": F.col("prev_epoch")},
                fmt(
                    "replica %d: batch %d is in leader epoch %d after a batch of epoch %d",
                    "replica",
                    "base_offset",
                    "epoch",
                    "prev_epoch",
                ),
            )
        )
    )


def epoch_checkpoint(
    valid: DataFrame, damaged_logs: DataFrame, checkpoints: DataFrame, compacted: list[str] = ()
) -> DataFrame:
    """Rebuild each replica's epoch entries as the log engine does (an entry where an epoch above
    every earlier one starts) and compare with `checkpoints` (replica, topic, partition, epoch,
    start_offset, first). Tolerated, as the engine repairs them at open: entries at or past the
    log end (a crash between the checkpoint write and the append), and a first entry starting
    later than its first batch (the log start moved up). In `compacted` topics an epoch may also
    start before its first remaining batch, or have none left: compaction removed them."""
    data = valid.filter(F.col("topic") != METADATA_TOPIC).join(
        damaged_logs, REPLICA_KEY, "left_anti"
    )
    w = (
        Window.partitionBy(*REPLICA_KEY)
        .orderBy("segment", "position")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    derived = (
        data.withColumn("prev_max", F.max("epoch").over(w))
        .filter((F.col("epoch") >= 0) & (F.col("epoch") > F.coalesce("prev_max", F.lit(-1))))
        .select(*REPLICA_KEY, "epoch", F.col("base_offset").alias("derived"))
    )
    ends = data.groupBy(*REPLICA_KEY).agg((F.max("last_offset") + 1).alias("log_end"))
    kept = (
        checkpoints.join(ends, REPLICA_KEY, "left")
        .filter(F.col("start_offset") < F.coalesce("log_end", F.lit(0)))
        .select(*REPLICA_KEY, "epoch", F.col("start_offset").alias("stored"), "first")
    )
    both = derived.join(kept, REPLICA_KEY + ["epoch"], "full_outer")
    thinned = (
        F.col("topic").isin(list(compacted))
        & F.col("stored").isNotNull()
        & (F.col("derived").isNull() | (F.col("stored") < F.col("derived")))
    )
    wrong = both.filter(
        (
            F.col("derived").isNull()
            | F.col("stored").isNull()
            | (
                (F.col("derived") != F.col("stored"))
                & ~(F.col("first") & (F.col("stored") > F.col("derived")))
            )
        )
        & ~thinned
    )
    per_log = wrong.groupBy(*REPLICA_KEY).agg(
        F.sort_array(F.collect_list(F.struct("epoch", "stored", "derived"))).alias("entries")
    )
    text = F.array_join(
        F.transform(
            "entries",
            lambda e: F.format_string(
                "epoch %d starts at %s in the checkpoint, %s in the batches",
                e["epoch"],
                F.coalesce(e["stored"].cast("string"), F.lit("none")),
                F.coalesce(e["derived"].cast("string"), F.lit("none")),
            ),
        ),
        "; ",
    )
    starts = F.flatten(F.transform("entries", lambda e: F.array(e["stored"], e["derived"])))
    return violations(
        per_log,
        "epoch-checkpoint",
        F.array_min(starts),
        F.array_max(starts),
        F.array("replica"),
        {"entries": F.col("entries")},
        F.concat(fmt("replica %d: leader-epoch-checkpoint disagrees: ", "replica"), text),
    )


def divergence(valid: DataFrame, high_watermarks: DataFrame, compacted: list[str]) -> DataFrame:
    """Below the final high watermark every replica holding a batch at an offset holds the same
    bytes there: followers copy the leader's batches byte for byte. Not for `compacted` topics:
    each replica compacts on its own schedule, so their copies legitimately differ."""
    below = (
        valid.filter((F.col("topic") != METADATA_TOPIC) & ~F.col("topic").isin(compacted))
        .join(high_watermarks, ["topic", "partition"])
        .filter(F.col("base_offset") < F.col("high_watermark"))
    )
    groups = below.groupBy("topic", "partition", "base_offset", "high_watermark").agg(
        F.countDistinct("digest").alias("versions"),
        F.max("last_offset").alias("last"),
        F.sort_array(
            F.collect_list(F.struct("replica", "last_offset", "epoch", "size", "digest"))
        ).alias("copies"),
    )
    bad = groups.filter(F.col("versions") > 1)
    text = F.array_join(
        F.transform(
            "copies",
            lambda c: F.format_string(
                "replica %d: %d-%d epoch %d, %d bytes, blake2b %s",
                c["replica"],
                F.col("base_offset"),
                c["last_offset"],
                c["epoch"],
                c["size"],
                c["digest"],
            ),
        ),
        "; ",
    )
    return violations(
        bad,
        "replica-divergence",
        F.col("base_offset"),
        F.col("last"),
        F.transform("copies", lambda c: c["replica"]),
        {"high_watermark": F.col("high_watermark"), "copies": F.col("copies")},
        F.concat(
            fmt(
                "replicas differ at offset %d, below the high watermark %d: ",
                "base_offset",
                "high_watermark",
            ),
            text,
        ),
    )


def epoch_assigned(valid: DataFrame, assigned: DataFrame) -> DataFrame:
    """`assigned`: (topic, partition, lo, hi), the leader epochs the metadata log gave."""
    used = (
        valid.filter(F.col("topic") != METADATA_TOPIC)
        .groupBy("topic", "partition", "epoch")
        .agg(
            F.min("base_offset").alias("first"),
            F.max("last_offset").alias("last"),
            F.sort_array(F.collect_set("replica")).alias("replicas"),
        )
    )
    bad = used.join(assigned, ["topic", "partition"], "left").filter(
        F.col("lo").isNull() | (F.col("epoch") < F.col("lo")) | (F.col("epoch") > F.col("hi"))
    )
    given = F.when(F.col("lo").isNull(), F.lit("no epoch at all")).otherwise(
        F.format_string("epochs %d-%d", "lo", "hi")
    )
    return violations(
        bad,
        "epoch-not-assigned",
        F.col("first"),
        F.col("last"),
        F.col("replicas"),
        {"epoch": F.col("epoch"), "assigned_lo": F.col("lo"), "assigned_hi": F.col("hi")},
        F.concat(
            fmt(
                "batches %d-%d carry leader epoch %d; the metadata log gave ",
                "first",
                "last",
                "epoch",
            ),
            given,
        ),
    )


def producer_sequences(
    valid: DataFrame, damaged_logs: DataFrame, compacted: list[str]
) -> DataFrame:
    """Per replica, partition and producer (id, epoch), batches in offset order carry sequences
    that continue the previous batch's: a repeat is a duplicate write, a hole a lost one. Not for
    `compacted` topics, where compaction removes whole batches and so leaves holes."""
    key = REPLICA_KEY + ["producer_id", "producer_epoch"]
    w = Window.partitionBy(*key).orderBy("base_offset")
    df = (
        valid.filter(
            (F.col("producer_id") >= 0)
            & (F.col("base_sequence") >= 0)
            & ((F.col("attributes").bitwiseAND(0x20)) == 0)
            & (F.col("topic") != METADATA_TOPIC)
            & ~F.col("topic").isin(compacted)
        )
        .join(damaged_logs, REPLICA_KEY, "left_anti")
        .withColumn("last_seq", F.col("base_sequence") + F.col("records_count") - 1)
        .withColumn("prev_seq", F.lag("last_seq").over(w))
    )
    bad = df.filter(
        F.col("prev_seq").isNotNull()
        & (F.col("base_sequence") != F.pmod(F.col("prev_seq") + 1, F.lit(SEQUENCE_SPACE)))
    ).withColumn(
        "kind", F.when(F.col("base_sequence") <= F.col("prev_seq"), "repeats").otherwise("skips")
    )
    merged = bad.groupBy(
        "topic",
        "partition",
        "producer_id",
        "producer_epoch",
        "base_offset",
        "last_offset",
        "base_sequence",
        "last_seq",
        "prev_seq",
        "kind",
    ).agg(F.sort_array(F.collect_set("replica")).alias("replicas"))
    return violations(
        merged,
        "producer-sequence",
        F.col("base_offset"),
        F.col("last_offset"),
        F.col("replicas"),
        {
            "producer_id": F.col("producer_id"),
            "producer_epoch": F.col("producer_epoch"),
            "sequences": F.array("base_sequence", "last_seq"),
            "previous_sequence": F.col("prev_seq"),
        },
        fmt(
            "producer %d epoch %d %s sequences: batch %d-%d has sequences %d-%d after %d",
            "producer_id",
            "producer_epoch",
            "kind",
            "base_offset",
            "last_offset",
            "base_sequence",
            "last_seq",
            "prev_seq",
        ),
    )
