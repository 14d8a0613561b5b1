"""The `kraft` Spark data source: Spark's Kafka-source options and schema over kraft topics.
Batch and micro-batch reads plan offset ranges on the driver and read them in the executors."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)

from clients.spark import offsets as o

SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int, "
    "headers array<struct<key: string, value: binary>>"
)
POLL_TIMEOUT_MS = 120_000  # Spark's kafkaConsumer.pollTimeoutMs default
FLUSH_TIMEOUT_S = 120.0


class RangePartition(InputPartition):
    def __init__(self, r: o.OffsetRange) -> None:
        super().__init__((r.topic, r.partition, r.start, r.end))
        self.range = r


def _bootstrap(options) -> str:
    servers = options.get("kraft.bootstrap.servers")
    if not servers:
        raise o.SourceOptionError(
            "set the option kraft.bootstrap.servers to the brokers "
            "(host:port[,host:port...]), e.g. 127.0.0.1:9092"
        )
    return servers


class KraftDataSource(DataSource):
    """format("kraft"): options as Spark's Kafka source, with kraft.bootstrap.servers."""

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return BatchReader(o.Options(self.options))

    def streamReader(self, schema):
        return StreamReader(o.Options(self.options))

    def writer(self, schema, overwrite: bool):
        return Writer(o.Options(self.options))

    def streamWriter(self, schema, overwrite: bool):
        return StreamWriter(o.Options(self.options))


class _Reading:
    """What batch and stream readers share: options, the driver's view of the topics, and the
    executor side read of one range."""

    def __init__(self, options: dict) -> None:
        self.options = options
        self.bootstrap = _bootstrap(options)
        self.topics_kind, self.topics = o.topics_option(options)
        self.fail_on_data_loss = o.bool_option(options, "failOnDataLoss", True)
        self.isolation_level = o.isolation_option(options)
        self.min_partitions = o.int_option(options, "minPartitions")
        self.poll_timeout_ms = (
            o.int_option(options, "kafkaConsumer.pollTimeoutMs") or POLL_TIMEOUT_MS
        )
        self._view = None

    def __getstate__(self):  # the executors need the options, not the driver's client
        return {**self.__dict__, "_view": None}

    @property
    def view(self):
        if self._view is None:
            from clients.spark.cluster import TopicsView

            self._view = TopicsView(
                self.bootstrap, self.topics_kind, self.topics, self.isolation_level
            )
        return self._view

    def _starting(self, spec, partitions, earliest, latest):
        ts = self.options.get("startingTimestamp")
        if ts is not None:
            try:
                ts = int(ts)
            except ValueError:
                raise o.SourceOptionError(
                    f"startingTimestamp={ts!r}: expected milliseconds since the epoch"
                ) from None
            return self.view.at_timestamp(partitions, ts, latest)
        return o.resolve(spec, partitions, earliest, latest, "startingOffsets")

    def read(self, partition):
        from clients.spark.fetch import read_range

        if not isinstance(partition, RangePartition):
            return iter(())  # Spark runs one empty task when partitions() gave none
        return read_range(
            self.bootstrap,
            partition.range,
            poll_timeout_ms=self.poll_timeout_ms,
            fail_on_data_loss=self.fail_on_data_loss,
            isolation_level=self.isolation_level,
        )


class BatchReader(_Reading, DataSourceReader):
    """startingOffsets (default earliest) to endingOffsets (default latest), fixed at planning."""

    def partitions(self):
        starting = o.offsets_option(self.options, "startingOffsets", "earliest")
        ending = o.offsets_option(self.options, "endingOffsets", "latest", ending=True)
        try:
            parts = self.view.partitions()
            earliest, latest = self.view.earliest(parts), self.view.latest(parts)
            start = self._starting(starting, parts, earliest, latest)
            start = o.check_data_loss(start, earliest, latest, self.fail_on_data_loss)
            end = o.resolve(ending, parts, earliest, latest, "endingOffsets")
        finally:
            self.view.close()
        ranges = o.split(start, {tp: max(end[tp], start[tp]) for tp in end}, self.min_partitions)
        return [RangePartition(r) for r in ranges]


class StreamReader(_Reading, DataSourceStreamReader):
    """Micro-batches: each batch's end offsets go to Spark's checkpoint (offsets log) before it
    runs, so a restarted query reads from the last committed end, skipping and repeating none."""

    def __init__(self, options: dict) -> None:
        super().__init__(options)
        self.max_offsets = o.int_option(options, "maxOffsetsPerTrigger")
        if "endingOffsets" in options:
            raise o.SourceOptionError(
                "endingOffsets is for batch reads (spark.read); a stream runs until stopped"
            )

    def initialOffset(self):
        starting = o.offsets_option(self.options, "startingOffsets", "latest")
        parts = self.view.partitions()
        earliest, latest = self.view.earliest(parts), self.view.latest(parts)
        return o.to_json(self._starting(starting, parts, earliest, latest))

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def latestOffset(self, start=None, limit=None):
        start = o.from_json(start) if start else {}
        parts = self.view.partitions()
        latest = self.view.latest(parts)
        new = [tp for tp in parts if tp not in start]
        # Partitions that appeared since the last batch start at their earliest offset.
        start = {**start, **self.view.earliest(new)}
        cap = getattr(limit, "max_rows", None) if limit is not None else self.max_offsets
        return o.to_json(o.cap(start, {tp: max(latest[tp], start[tp]) for tp in parts}, cap))

    def partitions(self, start, end):
        start, end = o.from_json(start), o.from_json(end)
        new = [tp for tp in end if tp not in start]
        earliest = self.view.earliest(list(end))
        latest = self.view.latest(list(end))
        start = {**start, **{tp: earliest[tp] for tp in new}}
        start = o.check_data_loss(start, earliest, latest, self.fail_on_data_loss)
        return [RangePartition(r) for r in o.split(start, end, self.min_partitions)]

    def commit(self, end):
        pass  # Spark's checkpoint holds the offsets; the broker keeps nothing for us

    def stop(self):
        if self._view is not None:
            self._view.close()


class Writer(DataSourceWriter):
    def __init__(self, options: dict) -> None:
        self.bootstrap = _bootstrap(options)
        self.topic = options.get("topic")

    def write(self, iterator):
        from clients.spark.sink import send_rows

        return send_rows(self.bootstrap, iterator, self.topic, FLUSH_TIMEOUT_S)


class StreamWriter(Writer, DataSourceStreamWriter):
    """Each micro-batch's rows are acknowledged (acks=all) before Spark commits the batch: a
    batch rerun after a crash may send its rows again (at least once, as Spark's Kafka sink)."""

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass
