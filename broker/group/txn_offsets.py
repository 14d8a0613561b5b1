"""Offsets committed inside transactions (TxnOffsetCommit), held per producer id until the
transaction's end marker reaches the partition: COMMIT applies them, ABORT drops them (Kafka's
pendingTransactionalOffsetCommits). Pure: the GroupCoordinator owns one."""
from __future__ import annotations

from broker.group.messages import OffsetAndMetadata
from clients.types import TopicPartition


class PendingTxnOffsets:
    def __init__(self) -> None:
        # producer id -> group id -> partition -> offset; a later commit of one partition by
        # the same transaction replaces the earlier one, as in Kafka.
        self._by_producer: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}

    def add(self, producer_id: int, group_id: str, tp: TopicPartition,
            offset: OffsetAndMetadata) -> None:
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = offset

    def complete(self, producer_id: int) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """The transaction of `producer_id` ended: its offsets per group, forgotten here (the
        caller applies them on COMMIT, drops them on ABORT)."""
        return self._by_producer.pop(producer_id, {})

    def producers(self) -> list[int]:
        return sorted(self._by_producer)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """Partitions of `group_id` with an offset waiting for some transaction's marker."""
        out: set[TopicPartition] = set()
        for groups in self._by_producer.values():
            out |= set(groups.get(group_id, ()))
        return out
