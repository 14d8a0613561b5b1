"""Small value types shared by the producer, consumer and admin clients (TopicPartition and
friends); plain NamedTuples so they hash fast and print well."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's place in its group (Consumer.group_metadata()), as confluent-kafka's: a
    transactional producer's send_offsets_to_transaction passes it on, so the group coordinator
    refuses offsets from a consumer the group has moved past (a zombie)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


# ListOffsets' special timestamps (Kafka's ListOffsetsRequest.LATEST_TIMESTAMP / EARLIEST_TIMESTAMP).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
