"""Runs in the Spark executors: reads one offset range of one partition from its leader with the
kraft Consumer, each poll's records handed to Spark as one Arrow record batch (Spark's row path
converts every value of every row in Python; a batch of columns skips that)."""

from __future__ import annotations

import functools
import time

from clients.consumer import Consumer
from clients.spark.offsets import OffsetRange
from clients.types import TopicPartition

CREATE_TIME = 0  # timestampType: the client reports no LogAppendTime, so CreateTime


@functools.cache
def arrow_schema():
    """The source's schema (source.SCHEMA) as the Arrow schema Spark checks each batch against."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    return to_arrow_schema(
        StructType(
            [
                StructField("key", BinaryType()),
                StructField("value", BinaryType()),
                StructField("topic", StringType()),
                StructField("partition", IntegerType()),
                StructField("offset", LongType()),
                StructField("timestamp", TimestampType()),
                StructField("timestampType", IntegerType()),
                StructField("headers", ArrayType(header)),
            ]
        ),
        timezone="UTC",
    )


def _batch(records, topic: str, partition: int):
    import pyarrow as pa

    schema = arrow_schema()
    n = len(records)
    headers = [[{"key": k, "value": v} for k, v in rec.headers] for rec in records]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([rec.key for rec in records], pa.binary()),
            pa.array([rec.value for rec in records], pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array([rec.offset for rec in records], pa.int64()),
            pa.array([rec.timestamp * 1000 for rec in records], schema.field("timestamp").type),
            pa.array([CREATE_TIME] * n, pa.int32()),
            pa.array(headers, schema.field("headers").type),
        ],
        schema=schema,
    )


class FetchTimeout(RuntimeError):
    """The leader gave nothing for longer than the poll timeout though the range is not done."""


def read_range(
    bootstrap: str,
    r: OffsetRange,
    *,
    poll_timeout_ms: int,
    fail_on_data_loss: bool,
    isolation_level: str = "read_uncommitted",
):
    """Arrow record batches of the columns (key, value, topic, partition, offset, timestamp,
    timestampType, headers) of every record in [r.start, r.end), in offset order, one batch per
    poll. Offsets may skip (compaction, control batches)."""
    if r.size == 0:
        return
    tp = TopicPartition(r.topic, r.partition)
    # Offsets deleted since planning: the consumer raises OFFSET_OUT_OF_RANGE ("none"), or,
    # with failOnDataLoss=false, carries on from the log start ("earliest").
    consumer = Consumer(
        bootstrap,
        client_id="kraft-spark-reader",
        max_poll_records=2000,
        auto_offset_reset="none" if fail_on_data_loss else "earliest",
        isolation_level=isolation_level,
    )
    try:
        consumer.assign([tp])
        consumer.seek(tp, r.start)
        deadline = time.monotonic() + poll_timeout_ms / 1000
        while True:
            records = consumer.poll(timeout_ms=200)
            inside = [rec for rec in records if rec.offset < r.end]
            if inside:
                yield _batch(inside, r.topic, r.partition)
            if len(inside) < len(records):
                return
            if records:
                deadline = time.monotonic() + poll_timeout_ms / 1000
            if consumer.position(tp) >= r.end:
                return
            if time.monotonic() > deadline:
                raise FetchTimeout(
                    f"{r.topic}-{r.partition}: no record from offset {consumer.position(tp)} "
                    f"within kraftConsumer.pollTimeoutMs={poll_timeout_ms} though the range "
                    f"ends at {r.end}; is the partition's leader reachable?"
                )
    finally:
        consumer.close()
