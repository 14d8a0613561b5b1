"""`from kraft.spark import register`: the `kraft` Spark data source (clients/spark/); PySpark is
imported only when register(spark) is called, so kraft works without it."""

from clients.spark import register

__all__ = ["register"]
