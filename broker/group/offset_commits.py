"""The offsets half of GroupCoordinator (Kafka's handleCommitOffsets, handleTxnCommitOffsets and
handleFetchOffsets): OffsetCommit and TxnOffsetCommit checked against the group's members and
generation, their records appended, and OffsetFetch answered from the committed offsets, as a
base class. How the records change the groups is GroupCoordinator's replay."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from broker.group import views
from broker.group.group import COMPLETING_REBALANCE, DEAD, EMPTY, Group
from broker.group.messages import (
    Effect,
    GroupConfig,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Respond,
    TxnOffsetCommitRequest,
)
from broker.group.records import OffsetCommitKey, OffsetCommitValue
from broker.group.txn_offsets import PendingTxnOffsets
from clients.errors import ErrorCode
from clients.types import TopicPartition

E = ErrorCode


class OffsetCommits:
    """Uses GroupCoordinator's `config`, `_groups`, `_appends`, `pending_txn_offsets`,
    `_append_records` and `_unavailable`, and Rebalance's `_check_member` (Kafka's
    validateCurrentMember; not declared here, where it would hide Rebalance's)."""

    config: GroupConfig
    _groups: dict[str, Group]
    _appends: dict[int, Any]
    pending_txn_offsets: PendingTxnOffsets

    def _append_records(
        self, group_id: str, kind: str, records, out, producer_epoch: int = -1, **extra: Any
    ) -> None:
        raise NotImplementedError

    def _unavailable(self) -> ErrorCode | None:
        raise NotImplementedError

    # -- offsets ----------------------------------------------------------------------------------
    def handle_offset_commit(
        self, handle: Hashable, req: OffsetCommitRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        group = self._groups.get(req.group_id)
        error = self._unavailable() or (None if req.group_id else E.INVALID_GROUP_ID)
        if error is None and group is None and req.generation_id >= 0:
            error = E.ILLEGAL_GENERATION  # a group we do not know cannot have generations
        if error is None and group is not None:
            error = self._commit_problem(group, req)
        if error is not None:
            return (Respond(handle, OffsetCommitResponse({tp: error for tp in req.offsets})),)
        member = group.members.get(req.member_id) if group is not None else None
        if member is not None:
            member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
        answers, records = self._offset_records(req.group_id, req.offsets, now_ms)
        if not records:
            return (Respond(handle, OffsetCommitResponse(answers)),)
        out: list[Effect] = []
        self._append_records(req.group_id, "offsets", records, out, handle=handle, answers=answers)
        return tuple(out)

    def handle_txn_offset_commit(
        self, handle: Hashable, req: TxnOffsetCommitRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        """Answered by Respond(handle, OffsetCommitResponse) once the transactional batch is
        committed; its offsets stay pending until the transaction's marker."""
        group = self._groups.get(req.group_id)
        error = self._unavailable() or (None if req.group_id else E.INVALID_GROUP_ID)
        if error is None and req.producer_id < 0:
            error = E.INVALID_PRODUCER_ID_MAPPING
        if error is None:
            error = self._txn_commit_problem(group, req)
        if error is not None:
            return (Respond(handle, OffsetCommitResponse({tp: error for tp in req.offsets})),)
        answers, records = self._offset_records(req.group_id, req.offsets, now_ms)
        if not records:
            return (Respond(handle, OffsetCommitResponse(answers)),)
        out: list[Effect] = []
        self._append_records(
            req.group_id,
            "offsets",
            records,
            out,
            handle=handle,
            answers=answers,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
        )
        return tuple(out)

    def _txn_commit_problem(
        self, group: Group | None, req: TxnOffsetCommitRequest
    ) -> ErrorCode | None:
        """Kafka's doTxnCommitOffsets: the member and generation, whatever the group's state."""
        if group is None:
            if req.member_id or req.group_instance_id is not None:
                return E.UNKNOWN_MEMBER_ID
            return E.ILLEGAL_GENERATION if req.generation_id >= 0 else None
        if group.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if req.member_id or req.group_instance_id is not None:
            error = self._check_member(group, req.member_id, req.group_instance_id)
            if error is not None:
                return error
        if req.generation_id >= 0 and req.generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        return None

    def _offset_records(self, group_id: str, offsets, now_ms: int) -> tuple[dict, list]:
        """Per-partition answers (metadata too large refused here) and the records to append."""
        answers, records = {}, []
        for tp, om in offsets.items():
            if len(om.metadata.encode()) > self.config.offset_metadata_max_bytes:
                answers[TopicPartition(*tp)] = E.OFFSET_METADATA_TOO_LARGE
                continue
            answers[TopicPartition(*tp)] = E.NONE
            records.append(
                (
                    OffsetCommitKey(group_id, tp[0], tp[1]),
                    OffsetCommitValue(om.offset, om.leader_epoch, om.metadata, now_ms),
                )
            )
        return answers, records

    def _commit_problem(self, group: Group, req: OffsetCommitRequest) -> ErrorCode | None:
        """Kafka's validateOffsetCommit, then the state."""
        if group.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self._check_member(group, req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation_id:
                error = E.ILLEGAL_GENERATION
            if error is None and group.state == COMPLETING_REBALANCE:
                # The member has its new generation but not its assignment yet.
                error = E.REBALANCE_IN_PROGRESS
            return error
        return None if group.state == EMPTY else E.UNKNOWN_MEMBER_ID

    # -- OffsetFetch ------------------------------------------------------------------------------
    def handle_offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        unstable = self._unstable_partitions(req.group_id) if req.require_stable else frozenset()
        return views.offset_fetch(
            self._groups.get(req.group_id), req, self._unavailable(), unstable
        )

    def _unstable_partitions(self, group_id: str) -> frozenset:
        """Kafka's hasPendingOffsetCommitsForTopicPartition: offsets of a transaction with no
        marker yet, and offset commits (plain or transactional) still being written."""
        writing = {
            tp
            for p in self._appends.values()
            if p.kind == "offsets" and p.group_id == group_id
            for tp, error in (p.answers or {}).items()
            if error == E.NONE
        }
        return frozenset(writing | self.pending_txn_offsets.partitions_of(group_id))
