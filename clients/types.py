"""Small value types shared by the producer, consumer and admin clients (TopicPartition and
friends); plain NamedTuples so they hash fast and print well."""
from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


# ListOffsets' special timestamps (Kafka's ListOffsetsRequest.LATEST_TIMESTAMP / EARLIEST_TIMESTAMP).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
