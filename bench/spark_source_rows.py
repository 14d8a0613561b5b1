"""CPU per record of handing consumer records to Spark: Spark's row path (tuples, converted
value by value by PySpark's own `records_to_arrow_batches`, as for the source before) against
one Arrow record batch per poll (clients/spark/fetch.py). No Spark session: this is the
Python work an executor does per record, the part the data source controls.

    PYTHONPATH=$PWD python bench/spark_source_rows.py --records 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import time

from clients.consumer.fetcher import ConsumerRecord
from clients.spark import fetch

UTC = datetime.UTC


def row_path(polls, return_type) -> int:
    from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

    def rows():
        for records in polls:
            for r in records:
                yield (
                    r.key,
                    r.value,
                    r.topic,
                    r.partition,
                    r.offset,
                    datetime.datetime.fromtimestamp(r.timestamp / 1000, tz=UTC),
                    fetch.CREATE_TIME,
                    [(k, v) for k, v in r.headers],
                )

    return sum(b.num_rows for b in records_to_arrow_batches(rows(), 10_000, return_type, None))


def arrow_path(polls) -> int:
    return sum(fetch._batch(records, "t", 0).num_rows for records in polls)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
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
    return_type = StructType(
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
    )
    value = b"x" * a.value_size
    records = [
        ConsumerRecord("t", 0, i, 1_700_000_000_000 + i, None, value, ()) for i in range(a.records)
    ]
    polls = [records[i : i + 2000] for i in range(0, len(records), 2000)]
    for _ in range(a.repeat):
        t0 = time.process_time()
        n1 = row_path(polls, return_type)
        t1 = time.process_time()
        n2 = arrow_path(polls)
        t2 = time.process_time()
        assert n1 == n2 == a.records
        row_us, arrow_us = (t1 - t0) / n1 * 1e6, (t2 - t1) / n2 * 1e6
        print(
            f"row path {row_us:.2f} us/record, arrow batch {arrow_us:.2f} us/record, "
            f"ratio {arrow_us / row_us:.2f}"
        )


if __name__ == "__main__":
    main()
