"""AsyncAdmin's consumer-group and transaction calls (a mixin): each asks the coordinator of the
group or the transactional id, through group_admin.py and txn_admin.py."""

from __future__ import annotations

from clients import group_admin, txn_admin
from clients.group_admin import GroupDescription, GroupListing
from clients.txn_admin import TransactionDescription, TransactionListing
from clients.types import TopicPartition


class CoordinatorCalls:
    """AsyncAdmin's group and transaction calls; the attributes (_cluster, _timeout_ms) are its."""

    # --- consumer groups (each asks the group's coordinator) ---------------------------------
    async def list_groups(self, states: list[str] | None = None) -> list[GroupListing]:
        """Every group of every broker (each coordinates some), sorted by id."""
        return await group_admin.list_groups(self._cluster, self._timeout_ms / 1000, states)

    async def describe_groups(
        self, group_ids: list[str], include_offsets: bool = True
    ) -> list[GroupDescription]:
        """State, members and their partitions, and (include_offsets) the committed offsets
        with log end and lag. A group that does not exist comes back in state Dead."""
        return [
            await group_admin.describe_group(
                self._cluster, g, include_offsets, self._timeout_ms / 1000
            )
            for g in group_ids
        ]

    async def delete_groups(self, group_ids: list[str]) -> None:
        """Delete empty groups and their committed offsets (NON_EMPTY_GROUP while members are
        active, GROUP_ID_NOT_FOUND for an unknown one)."""
        for g in group_ids:
            await group_admin.delete_group(self._cluster, g, self._timeout_ms / 1000)

    async def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        return await group_admin.list_group_offsets(
            self._cluster, group_id, self._timeout_ms / 1000
        )

    async def alter_group_offsets(self, group_id: str, offsets: dict) -> None:
        """Set committed offsets ({tp: offset}); refused while the group has members."""
        await group_admin.alter_group_offsets(
            self._cluster, group_id, offsets, self._timeout_ms / 1000
        )

    # --- transactions (clients/txn_admin.py) --------------------------------------------------

    async def list_transactions(
        self, states: list[str] | None = None, producer_ids: list[int] | None = None
    ) -> list[TransactionListing]:
        """Every transactional id every broker coordinates (optionally only in these states or
        of these producer ids), sorted by id."""
        return await txn_admin.list_transactions(
            self._cluster, self._timeout_ms / 1000, states, producer_ids
        )

    async def describe_transactions(
        self, transactional_ids: list[str]
    ) -> list[TransactionDescription]:
        """State, producer id and epoch, timeout, start time and partitions of each id, asked
        of its transaction coordinator."""
        return [
            await txn_admin.describe_transaction(self._cluster, t, self._timeout_ms / 1000)
            for t in transactional_ids
        ]

    async def abort_transaction(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int = 0,
    ) -> None:
        """Abort a hanging transaction on one partition (an ABORT marker written by its leader,
        as kafka-transactions.sh abort does): for a producer whose coordinator no longer
        tracks the transaction that keeps the partition's last stable offset back."""
        await txn_admin.abort_transaction(
            self._cluster,
            topic,
            partition,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            self._timeout_ms / 1000,
        )
