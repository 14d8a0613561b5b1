"""Runs in the Spark executors: reads one offset range of one partition from its leader with the
kraft Consumer, and sends rows with the idempotent Producer, as the source's rows and tuples."""
from __future__ import annotations

import datetime
import time

from clients.consumer import Consumer
from clients.types import TopicPartition

from chaos.spark_source.offsets import OffsetRange

UTC = datetime.timezone.utc
CREATE_TIME = 0     # timestampType: the client reports no LogAppendTime, so CreateTime


class FetchTimeout(RuntimeError):
    """The leader gave nothing for longer than the poll timeout though the range is not done."""


def read_range(bootstrap: str, r: OffsetRange, *, poll_timeout_ms: int,
               fail_on_data_loss: bool):
    """(key, value, topic, partition, offset, timestamp, timestampType, headers) of every record
    in [r.start, r.end), in offset order. Offsets may skip (compaction, control batches)."""
    if r.size == 0:
        return
    tp = TopicPartition(r.topic, r.partition)
    # Offsets deleted since planning: the consumer raises OFFSET_OUT_OF_RANGE ("none"), or,
    # with failOnDataLoss=false, carries on from the log start ("earliest").
    consumer = Consumer(bootstrap, client_id="kraft-spark-reader", max_poll_records=2000,
                        auto_offset_reset="none" if fail_on_data_loss else "earliest")
    try:
        consumer.assign([tp])
        consumer.seek(tp, r.start)
        deadline = time.monotonic() + poll_timeout_ms / 1000
        while True:
            records = consumer.poll(timeout_ms=200)
            for rec in records:
                if rec.offset >= r.end:
                    return
                yield (rec.key, rec.value, rec.topic, rec.partition, rec.offset,
                       datetime.datetime.fromtimestamp(rec.timestamp / 1000, tz=UTC),
                       CREATE_TIME, [(k, v) for k, v in rec.headers])
            if records:
                deadline = time.monotonic() + poll_timeout_ms / 1000
            if consumer.position(tp) >= r.end:
                return
            if time.monotonic() > deadline:
                raise FetchTimeout(
                    f"{r.topic}-{r.partition}: no record from offset {consumer.position(tp)} "
                    f"within kraftConsumer.pollTimeoutMs={poll_timeout_ms} though the range "
                    f"ends at {r.end}; is the partition's leader reachable?")
    finally:
        consumer.close()
