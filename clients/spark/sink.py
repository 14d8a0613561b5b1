"""Runs in the Spark executors: sends a task's rows to their topics with the idempotent
Producer (acks=all), and fails the task when any record is not acknowledged."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage

from clients.producer import Producer


@dataclass
class Sent(WriterCommitMessage):
    records: int


def _bytes(value, column: str):
    if value is None or isinstance(value, (bytes, bytearray)):
        return None if value is None else bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"column '{column}' must be string or binary, found {type(value).__name__}")


def send_rows(bootstrap: str, rows, default_topic: str | None, flush_timeout_s: float) -> Sent:
    """Spark's Kafka sink columns: value (required), key, topic (or the `topic` option, which
    wins as in Spark), partition, headers (array<struct<key string, value binary>>)."""
    errors: list = []
    futures, n = [], 0
    producer = Producer(
        bootstrap, acks="all", enable_idempotence=True, client_id="kraft-spark-writer"
    )
    try:
        for row in rows:
            fields = row.asDict()
            topic = default_topic or fields.get("topic")
            if not topic:
                raise ValueError(
                    "a row has no topic: set the option topic=<name> or give the "
                    "DataFrame a string column 'topic'"
                )
            if "value" not in fields:
                raise ValueError("the DataFrame written needs a 'value' column (string or binary)")
            headers = [
                (h["key"], _bytes(h["value"], "headers.value")) for h in fields.get("headers") or ()
            ]
            futures.append(
                producer.send(
                    topic,
                    _bytes(fields["value"], "value"),
                    _bytes(fields.get("key"), "key"),
                    partition=fields.get("partition"),
                    headers=headers or None,
                )
            )
            n += 1
            if len(futures) >= 10_000:
                _settle(producer, futures, errors, flush_timeout_s)
        _settle(producer, futures, errors, flush_timeout_s)
    finally:
        producer.close(timeout=flush_timeout_s)
    if errors:
        raise errors[0]
    return Sent(n)


def _settle(producer: Producer, futures: list, errors: list, timeout_s: float) -> None:
    producer.flush(timeout=timeout_s)
    for f in futures:
        exc = f.exception(timeout=timeout_s)
        if exc is not None and not errors:
            errors.append(exc)
    futures.clear()
