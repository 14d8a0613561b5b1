"""Jepsen's Kafka anomalies (jepsen/tests/kafka.clj, checked our own way) over the history, plus
the values the replica logs hold below their high watermark: every row of a Kafka partition is
shuffled to one task, which checks that partition's whole history at once
(chaos/audit/partition_checks.py)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from chaos.audit.partition_checks import (
    LIST_FIELDS,
    SCALAR_FIELDS,
    VIOLATION_FIELDS,
    check_partition,
)
from chaos.audit.segments import arrow_schema, ddl, list_fields

# the history's event kinds the checks read, besides resets (which every partition's rows get)
_PARTITION_KINDS = ("send", "read", "rebalance", "commit")
_FIELDS = SCALAR_FIELDS + list_fields(LIST_FIELDS)


def frame(spark: SparkSession, rows, fields) -> DataFrame:
    """Driver rows to a DataFrame through Arrow (far faster than Spark's row-by-row path)."""
    import pyarrow as pa

    schema = arrow_schema(fields)
    columns = list(zip(*rows)) if rows else [[] for _ in fields]
    table = pa.Table.from_arrays(
        [pa.array(c, type=schema.field(i).type) for i, c in enumerate(columns)], schema=schema
    )
    return spark.createDataFrame(table)


def _shaped(df: DataFrame) -> DataFrame:
    """df's columns in the checks' row shape, the ones it lacks null."""
    have = set(df.columns)
    return df.select(*[F.col(n) if n in have else F.lit(None).cast(k).alias(n) for n, k in _FIELDS])


def partition_rows(
    events: DataFrame, log: DataFrame | None, high_watermarks: DataFrame | None
) -> DataFrame:
    """What the checks read, as chunk rows keyed by partition: the history's sends, polled values,
    rebalances and commits (HistoryFrames.events); each consumer reset once per partition read
    (a reset changes the consumer's session in all of them); the replicas' records (the
    segments' log_chunks) with their partition's final high watermark, if given."""
    kind = F.col("kind")
    rows = _shaped(events.filter(kind.isin(*_PARTITION_KINDS)))
    read = events.filter(kind == "read").select("key").distinct()
    resets = events.filter(kind == "reset").drop("key").crossJoin(F.broadcast(read))
    rows = rows.unionByName(_shaped(resets))
    if log is not None and high_watermarks is not None:
        rows = rows.unionByName(
            _shaped(log.join(F.broadcast(high_watermarks), ["topic", "partition"]))
        )
    return rows


def check_history(rows: DataFrame) -> DataFrame:
    """Every history check as one frame of violations: one shuffle by Kafka partition, then each
    partition's rows are checked together, in one Python call."""
    return rows.groupBy("key").applyInArrow(check_partition, ddl(VIOLATION_FIELDS))
