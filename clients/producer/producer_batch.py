"""The accumulator's values: a ProducerBatch (one partition's records and its send state), the
Drained answer of a drain, and a record's estimated size with the error for one too large."""

from __future__ import annotations

from typing import Any, NamedTuple

from clients.errors import RecordTooLarge

# Bytes a record adds beyond its key and value (varints, attributes, deltas): an estimate used
# only to decide when a batch is full, as Kafka's estimateSizeInBytesUpperBound does.
RECORD_OVERHEAD = 16
BATCH_OVERHEAD = 61


class ProducerBatch:
    __slots__ = (
        "topic",
        "partition",
        "records",
        "size",
        "created_ms",
        "result",
        "attempts",
        "retry_at_ms",
        "closed",
        "seq",
        "encoded",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "fate_unknown",
        "sent_behind",
    )

    def __init__(self, topic: str, partition: int, result: Any, created_ms: int, seq: int) -> None:
        self.topic = topic
        self.partition = partition
        self.records: list = []
        self.size = BATCH_OVERHEAD
        self.created_ms = created_ms
        self.result = result
        self.attempts = 0
        self.retry_at_ms = 0
        self.closed = False
        self.seq = seq  # creation order, to put retries back in order
        self.encoded: bytes | None = None  # kept for retries: the same bytes go out again
        # Idempotence: set when first drained, kept on retries (see idempotence.py).
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.fate_unknown = False  # an attempt's outcome was never learned (see idempotence.py)
        self.sent_behind = False  # its last attempt left while an earlier batch was unresolved

    def __repr__(self) -> str:
        return (
            f"ProducerBatch({self.topic}-{self.partition}, {len(self.records)} records, "
            f"{self.size} B, attempts={self.attempts})"
        )


class Drained(NamedTuple):
    requests: dict  # node id -> list[ProducerBatch] for one ProduceRequest
    expired: list  # batches past delivery_timeout_ms (not in flight): fail them
    unknown: set  # topics whose partition leaders are unknown: refresh metadata
    next_ms: int | None  # when the next batch becomes ready (None: nothing waits)
    blocked: set = frozenset()  # partitions with batches that `allowed` refused


def record_size(key: bytes | None, value: bytes | None, headers) -> int:
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for k, v in headers:
            size += len(k) + (len(v) if v else 0) + 4
    return size


def too_large(size: int, max_request_size: int, buffer_memory: int | None) -> RecordTooLarge:
    """Kafka's wording for a record no request can carry, naming the setting to raise."""
    if size > max_request_size:
        return RecordTooLarge(
            f"the record is {size} bytes when serialized (with its batch's {BATCH_OVERHEAD}), "
            f"over max_request_size={max_request_size} (Kafka's max.request.size), the largest "
            f"request this producer sends: raise max_request_size (and the topic's "
            f"max.message.bytes if the record is larger than it too), or send a smaller record"
        )
    return RecordTooLarge(
        f"the record is {size} bytes when serialized, over buffer_memory={buffer_memory} "
        f"(Kafka's buffer.memory), the most this producer holds unsent: raise buffer_memory, "
        f"or send a smaller record"
    )
