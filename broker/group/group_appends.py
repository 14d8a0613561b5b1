"""GroupCoordinator's appends and replay (a mixin): the records it writes, what their results
answer, and the replay of `__consumer_offsets` that alone changes the durable state."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from broker.group.group import COMPLETING_REBALANCE, EMPTY, STABLE, Group
from broker.group.messages import (
    AppendRecords,
    Effect,
    OffsetAndMetadata,
    OffsetCommitResponse,
    Respond,
)
from broker.group.rebalance import ACTIVE, LOADING, RESIGNED, store_error
from broker.group.records import OffsetCommitKey, decode_record, encode_record
from clients.errors import ErrorCode
from clients.types import TopicPartition

E = ErrorCode


@dataclass
class PendingAppend:
    kind: str  # "offsets", "assignment", "static-rejoin", "group", "delete"
    group_id: str
    records: tuple
    handle: Hashable | None = None
    generation: int = -1
    answers: dict | None = None  # offsets: the per-partition errors found before the append
    member_id: str = ""
    revert: tuple | None = None  # static-rejoin: the old member id, protocols and timeouts
    producer_id: int = -1  # offsets of a transaction (TxnOffsetCommit): its producer
    ended: bool | None = None  # its transaction's marker came first: committed or not


class GroupAppends:
    """GroupCoordinator's records; the attributes are its (partition_coordinator.py)."""

    def _append(self, group: Group, kind: str, records, out, **extra: Any) -> None:
        self._append_records(group.group_id, kind, records, out, **extra)

    def _append_records(
        self, group_id: str, kind: str, records, out, producer_epoch: int = -1, **extra: Any
    ) -> None:
        self._next_append_id += 1
        encoded = tuple(encode_record(k, v) for k, v in records)
        pending = self._appends[self._next_append_id] = PendingAppend(
            kind, group_id, encoded, **extra
        )
        out.append(
            AppendRecords(self._next_append_id, encoded, pending.producer_id, producer_epoch)
        )

    def on_append_result(
        self,
        append_id: int,
        error: ErrorCode = ErrorCode.NONE,
        now_ms: int = 0,
        base_offset: int = -1,
    ) -> tuple[Effect, ...]:
        """The records of AppendRecords `append_id` committed (error NONE: they are replayed
        now) or failed. `base_offset`, where known, is the first one's offset."""
        pending = self._appends.pop(append_id, None)
        if pending is None or self.status != ACTIVE:
            return ()
        if error == E.NONE:
            for i, (key, value) in enumerate(pending.records):
                self.replay(
                    key, value, base_offset + i if base_offset >= 0 else -1, pending.producer_id
                )
            if pending.ended is not None:
                self.replay_txn_marker(pending.producer_id, pending.ended)
        out: list[Effect] = []
        group = self._groups.get(pending.group_id)
        if pending.kind == "offsets":
            failed = store_error(error, offsets=True)
            out.append(
                Respond(
                    pending.handle,
                    OffsetCommitResponse({tp: e or failed for tp, e in pending.answers.items()}),
                )
            )
        elif pending.kind == "delete":
            self._delete_stored(pending.group_id, pending, error, out)
        elif group is not None and pending.kind == "assignment":
            self._assignment_stored(group, pending, error, now_ms, out)
        elif group is not None and pending.kind == "static-rejoin":
            self._static_rejoin_stored(group, pending, error, out)
        elif (
            group is not None
            and error != E.NONE
            and group.state == EMPTY
            and group.generation_id == pending.generation
        ):
            # Emptied but not recorded: go back to what the log says (as a new coordinator
            # would); the members' sessions, if they are really gone, empty it again.
            group.load(group.stored, now_ms)
        if group is not None:
            self._settle(group, now_ms, out)
        return tuple(out)

    def replay(
        self, key: bytes, value: bytes | None, offset: int = -1, producer_id: int = -1
    ) -> None:
        """Apply one `__consumer_offsets` record: a loading coordinator calls it for the whole
        partition; an active one only through `on_append_result`. `producer_id` >= 0: the record
        is in a transactional batch of that producer (pending until its marker)."""
        k, v = decode_record(key, value)
        if offset >= 0:
            self.loaded_offset = offset + 1
        group = self._groups.get(k.group)
        if producer_id >= 0 and isinstance(k, OffsetCommitKey) and v is not None:
            self.pending_txn_offsets.add(
                producer_id,
                k.group,
                TopicPartition(k.topic, k.partition),
                OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata),
                offset,
            )
        elif isinstance(k, OffsetCommitKey):
            tp = TopicPartition(k.topic, k.partition)
            if v is not None:
                group = group or self._groups.setdefault(k.group, Group(k.group))
                group.offsets[tp] = OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata)
                self.pending_txn_offsets.applied(k.group, tp, offset)
            else:
                self.pending_txn_offsets.drop(k.group, tp)
                if group is not None:
                    group.offsets.pop(tp, None)
                    if group.is_blank():
                        del self._groups[k.group]
        elif v is None:
            if group is not None and group.offsets:
                self._groups[k.group] = Group(k.group, offsets=group.offsets)
            else:
                self._groups.pop(k.group, None)
        elif group is None or self.status == LOADING:
            group = group or self._groups.setdefault(k.group, Group(k.group))
            group.load(v)
        else:
            self._replay_own_group_record(group, v)

    def replay_txn_marker(self, producer_id: int, committed: bool, offset: int = -1) -> None:
        """The end marker of `producer_id`'s transaction in this partition (at `offset`): its
        pending offsets become the groups' committed offsets (COMMIT) or are dropped (ABORT).
        A marker seen twice (log replay, then the broker's notice) finds nothing pending."""
        if offset >= 0:
            self.loaded_offset = max(self.loaded_offset, offset + 1)
        for pending in self._appends.values():
            if pending.producer_id == producer_id:
                # Appended before the marker (a client that gave up waiting for its
                # TxnOffsetCommit and ended the transaction): it ends with it once replayed.
                pending.ended = committed
        ended = self.pending_txn_offsets.complete(producer_id, committed)
        if self.status == RESIGNED:
            return
        for group_id, offsets in ended.items():
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = Group(group_id)
            group.offsets.update(offsets)

    def _replay_own_group_record(self, group: Group, v) -> None:
        group.stored = v
        if group.state == COMPLETING_REBALANCE and group.storing_generation == v.generation:
            stored = {m.member_id: m.assignment for m in v.members}
            for m in group.members.values():
                m.assignment = stored.get(m.member_id, b"")
            group.storing_generation = None
            group.state = STABLE
        # Otherwise the record is one this coordinator wrote for a state the live group already
        # holds (Empty, a static rejoin) or has since left behind (a newer rebalance began).
