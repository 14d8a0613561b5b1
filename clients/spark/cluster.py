"""What the driver asks the cluster before planning a read: the partitions of the topics read,
their earliest and latest offsets, and the offsets of a timestamp, through the kraft client."""

from __future__ import annotations

from clients.consumer import Consumer
from clients.errors import ErrorCode, KraftError
from clients.spark.offsets import Partition, SourceOptionError
from clients.types import TopicPartition


class TopicsView:
    """One metadata Consumer (no group) for the life of a reader on the driver."""

    def __init__(
        self, bootstrap: str, topics_kind: str, topics, isolation_level: str = "read_uncommitted"
    ) -> None:
        self.bootstrap, self.kind, self.topics = bootstrap, topics_kind, topics
        # read_committed: the latest offset is the last stable offset, where such a read ends.
        self.isolation_level = isolation_level
        self._consumer: Consumer | None = None

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(
                self.bootstrap, client_id="kraft-spark-driver", isolation_level=self.isolation_level
            )
        return self._consumer

    def partitions(self) -> list[Partition]:
        """The partitions read now: subscribe and subscribePattern follow new partitions and
        (pattern) new topics, as Spark's Kafka source does."""
        if self.kind == "assign":
            return list(self.topics)
        if self.kind == "subscribe":
            names = self.topics
        else:
            from clients.admin import Admin

            admin = Admin(self.bootstrap)
            try:
                names = [t for t in admin.list_topics() if self.topics.fullmatch(t)]
            finally:
                admin.close()
        out = []
        for topic in names:
            try:
                out += [(topic, p) for p in self.consumer.partitions_for_topic(topic)]
            except KraftError as exc:
                if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    raise
                raise SourceOptionError(f"subscribe: {exc}") from None
        return sorted(out)

    def earliest(self, partitions) -> dict[Partition, int]:
        return self._offsets(self.consumer.beginning_offsets, partitions)

    def latest(self, partitions) -> dict[Partition, int]:
        return self._offsets(self.consumer.end_offsets, partitions)

    def _offsets(self, ask, partitions) -> dict[Partition, int]:
        if not partitions:
            return {}
        answers = ask([TopicPartition(t, p) for t, p in partitions])
        return {(tp.topic, tp.partition): offset for tp, offset in answers.items()}

    def at_timestamp(self, partitions, timestamp_ms: int, latest: dict) -> dict[Partition, int]:
        """The first offset whose record's timestamp is >= timestamp_ms; the end of the log
        when there is none (Spark's startingOffsetsByTimestampStrategy=latest)."""
        if not partitions:
            return {}
        found = self.consumer.offsets_for_times(
            {TopicPartition(t, p): timestamp_ms for t, p in partitions}
        )
        return {
            (tp.topic, tp.partition): (latest[(tp.topic, tp.partition)] if hit is None else hit[0])
            for tp, hit in found.items()
        }

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
