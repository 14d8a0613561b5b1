"""Topics as a Spark data source named `kraft` (batch and streaming reads, batch and streaming
writes) on PySpark's Python Data Source API; `register(spark)` makes `format("kraft")` work.
Built on the clients alone; PySpark is imported only when register is called."""

from __future__ import annotations


def register(spark) -> None:
    """spark.read.format("kraft") / readStream / write / writeStream in this session."""
    from clients.spark.source import KraftDataSource

    spark.dataSource.register(KraftDataSource)
