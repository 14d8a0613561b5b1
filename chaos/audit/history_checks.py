"""Jepsen's Kafka anomalies (jepsen/tests/kafka.clj, checked our own way) over the history, plus
the values the replica logs hold below their high watermark: every row of a Kafka partition is
shuffled to one task, which checks that partition's whole history at once
(chaos/audit/partition_checks.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from chaos.audit.partition_checks import ROW_FIELDS, VIOLATION_FIELDS, check_partition
from chaos.audit.replica_checks import partition_name
from chaos.audit.segments import METADATA_TOPIC, arrow_schema, ddl

# the history's event kinds the checks read, besides resets (which every partition's rows get)
_PARTITION_KINDS = ("send", "read", "rebalance", "commit")


def frame(spark: SparkSession, rows, fields) -> DataFrame:
    """Driver rows to a DataFrame through Arrow (far faster than Spark's row-by-row path)."""
    import pyarrow as pa

    schema = arrow_schema(fields)
    columns = list(zip(*rows)) if rows else [[] for _ in fields]
    table = pa.Table.from_arrays([pa.array(c, type=schema.field(i).type)
                                  for i, c in enumerate(columns)], schema=schema)
    return spark.createDataFrame(table)


def _shaped(df: DataFrame) -> DataFrame:
    """df's columns in ROW_FIELDS order, the ones it lacks null."""
    have = set(df.columns)
    return df.select(*[F.col(n) if n in have else F.lit(None).cast(k).alias(n)
                       for n, k in ROW_FIELDS])


def partition_rows(events: DataFrame, records: DataFrame | None,
                   high_watermarks: DataFrame | None) -> DataFrame:
    """What the checks read, as ROW_FIELDS rows: the history's sends, polled values, rebalances
    and commits; each consumer reset once per partition read (a reset changes the consumer's
    session in all of them); the replicas' records below their partition's final high
    watermark, if given (a partition the history does not touch is skipped by its task)."""
    kind = F.col("kind")
    rows = _shaped(events.filter(kind.isin(*_PARTITION_KINDS)))
    read = events.filter(kind == "read").select("partition").distinct()
    resets = events.filter(kind == "reset").drop("partition").crossJoin(F.broadcast(read))
    rows = rows.unionByName(_shaped(resets))
    if records is not None and high_watermarks is not None:
        log = (records.filter(F.col("topic") != METADATA_TOPIC)
               .join(F.broadcast(high_watermarks), ["topic", "partition"])
               .filter(F.col("offset") < F.col("high_watermark"))
               .select(F.lit("log").alias("kind"), partition_name().alias("partition"),
                       "offset", "value", "replica"))
        rows = rows.unionByName(_shaped(log))
    return rows


def check_history(rows: DataFrame) -> DataFrame:
    """Every history check as one frame of violations: one shuffle by Kafka partition, then each
    partition's rows are checked together, in one Python call."""
    return rows.groupBy("partition").applyInArrow(check_partition, ddl(VIOLATION_FIELDS))
