"""Offsets committed inside transactions (TxnOffsetCommit), held per producer id until the
transaction's end marker reaches the partition: COMMIT applies them, ABORT drops them (Kafka's
pendingTransactionalOffsetCommits). Pure: the GroupCoordinator owns one.

A committed transaction's offset replaces a partition's current one only if it was written
after it (Kafka's olderThan check): a plain OffsetCommit appended while the transaction was open
is newer and stays."""

from __future__ import annotations

from broker.group.messages import OffsetAndMetadata
from clients.types import TopicPartition


class PendingTxnOffsets:
    def __init__(self) -> None:
        # producer id -> group id -> partition -> (offset, where its record is in the log); a
        # later commit of one partition by the same transaction replaces the earlier one.
        self._by_producer: dict[int, dict[str, dict[TopicPartition, tuple]]] = {}
        # (group, partition) -> where the offset in effect was written, where known.
        self._written_at: dict[tuple[str, TopicPartition], int] = {}

    def add(
        self,
        producer_id: int,
        group_id: str,
        tp: TopicPartition,
        offset: OffsetAndMetadata,
        record_offset: int = -1,
    ) -> None:
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = (
            offset,
            record_offset,
        )

    def applied(self, group_id: str, tp: TopicPartition, record_offset: int) -> None:
        """A plain OffsetCommit record (at `record_offset`, -1 unknown) is now in effect."""
        if record_offset >= 0:
            self._written_at[(group_id, tp)] = record_offset
        else:
            self._written_at.pop((group_id, tp), None)

    def complete(
        self, producer_id: int, committed: bool
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """The transaction of `producer_id` ended: forget its offsets; on COMMIT return, per
        group, those to apply (newer than the offset in effect)."""
        ended = self._by_producer.pop(producer_id, {})
        if not committed:
            return {}
        out: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for group_id, offsets in ended.items():
            for tp, (offset, at) in offsets.items():
                current = self._written_at.get((group_id, tp), -1)
                if at < 0 or current < at:
                    out.setdefault(group_id, {})[tp] = offset
                    self.applied(group_id, tp, at)
        return out

    def drop(self, group_id: str, tp: TopicPartition) -> None:
        """A tombstone for `group_id`'s offset of `tp` (DeleteGroups, OffsetDelete): no open
        transaction's offset for it survives (Kafka drops them on the tombstone's replay), so a
        later COMMIT marker brings nothing of a deleted group back."""
        for groups in self._by_producer.values():
            offsets = groups.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del groups[group_id]
        self._written_at.pop((group_id, tp), None)

    def partitions_of(self, group_id: str) -> set[TopicPartition]:
        """The partitions of `group_id` some transaction holds offsets for."""
        return {tp for groups in self._by_producer.values() for tp in groups.get(group_id, ())}

    def producers(self) -> list[int]:
        return sorted(self._by_producer)
