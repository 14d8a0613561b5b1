"""GroupCoordinator: every group of one `__consumer_offsets` partition as a pure core (Kafka's
classic GroupCoordinator): Group RPCs, `tick` and append results in with `now_ms`; effects out.
Membership and rebalances come from rebalance.py, OffsetCommit and OffsetFetch from
offset_commits.py, the appends, their results and the replay that changes state from
group_appends.py; the life cycle, the Group RPCs and DeleteGroups are here."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from broker.group import views
from broker.group.group import DEAD, EMPTY, PREPARING_REBALANCE, STABLE, Group
from broker.group.group_appends import GroupAppends, PendingAppend
from broker.group.messages import (
    UNKNOWN_MEMBER_ID,
    DescribedGroup,
    Effect,
    GroupConfig,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    Respond,
    SyncGroupRequest,
    SyncGroupResponse,
)
from broker.group.offset_commits import OffsetCommits
from broker.group.rebalance import ACTIVE, LOADING, RESIGNED, Rebalance, store_error
from broker.group.records import GroupMetadataKey, OffsetCommitKey
from broker.group.txn_offsets import PendingTxnOffsets
from clients.errors import ErrorCode

if TYPE_CHECKING:
    import random

# States and transitions (Kafka's rules, GroupCoordinator.scala), in one place:
# - Empty -> PreparingRebalance: a JoinGroup. From Empty the join waits
#   group.initial.rebalance.delay.ms, again while new members keep arriving, never past the
#   rebalance timeout (the largest member rebalance_timeout_ms, i.e. max.poll.interval.ms).
# - Stable / CompletingRebalance -> PreparingRebalance: a new member joins; the leader, or a member
#   with changed metadata, rejoins; a member leaves or its session.timeout.ms passes without a
#   heartbeat; a member has not sent SyncGroup a rebalance timeout after the join completed.
#   Leaving CompletingRebalance answers every parked SyncGroup REBALANCE_IN_PROGRESS.
# - PreparingRebalance -> CompletingRebalance (generation + 1): every member has rejoined (and no
#   MEMBER_ID_REQUIRED member is outstanding), or the rebalance timeout passed: dynamic members that
#   did not rejoin are dropped, static ones stay until their session expires. Each parked JoinGroup
#   is answered; the leader's answer lists every member's metadata for the chosen protocol.
# - PreparingRebalance -> Empty (generation + 1): nobody is left; a GroupMetadata record says so.
# - CompletingRebalance -> Stable: the leader's SyncGroup writes a GroupMetadata record with every
#   member's assignment; once it is committed, its replay makes the group Stable and the parked
#   SyncGroups get their assignments. A failed append starts another rebalance.
# - Empty -> Dead: DeleteGroups. Tombstones for its offsets and its record are appended; once
#   committed their replay forgets the group; if the append fails it is Empty again.
# - A static member (group.instance.id) rejoining with no member id takes over its old member id's
#   place (that incarnation's parked requests get FENCED_INSTANCE_ID). In Stable with the same
#   protocols nothing rebalances: a GroupMetadata record with the new member id is written, then it
#   is told the current generation, and its SyncGroup returns its old assignment.
# - Requests are checked in Kafka's order: loading (COORDINATOR_LOAD_IN_PROGRESS), resigned
#   (NOT_COORDINATOR), unknown group or member (UNKNOWN_MEMBER_ID), instance id mapped to another
#   member id (FENCED_INSTANCE_ID), wrong generation (ILLEGAL_GENERATION), then the state:
#   Heartbeat and SyncGroup in PreparingRebalance, OffsetCommit in CompletingRebalance get
#   REBALANCE_IN_PROGRESS (a commit in PreparingRebalance is allowed: the member still owns its
#   partitions until it rejoins). OffsetCommit with generation -1 and no member id is allowed only
#   while the group is Empty.
#
# Requests that wait (Kafka's purgatories) are parked by the opaque handle the driver gave: a
# JoinGroup until the join completes, a SyncGroup until the assignment is committed, an
# OffsetCommit or a static rejoin until its record is. Whichever later call releases them (another
# JoinGroup, a LeaveGroup, `tick`, `on_append_result`) returns Respond(handle, response) effects.
# Every handle is answered exactly once; `resign` answers all parked ones NOT_COORDINATOR.
#
# Transactional offsets (TxnOffsetCommit): checked as an OffsetCommit's member and generation
# (no state check: Kafka's doTxnCommitOffsets), written as a transactional batch of the producer,
# and once replayed held pending per producer id, out of OffsetFetch's sight. The transaction's
# end marker in this partition (`replay_txn_marker`, from the log at load or from the broker
# once WriteTxnMarkers committed it) applies them on COMMIT and drops them on ABORT.
#
# What is durable: committed offsets and, per group, the last GroupMetadata record. Only `replay`
# changes them, for the records this coordinator wrote (once committed: nothing to undo when an
# append fails) and for the partition's log when a new coordinator loads it; a loaded group is
# Stable (or Empty) at the recorded generation. The rebalance in progress is soft state, as in
# Kafka: after a failover members simply rejoin. A group emptied whose record then fails to append
# goes back to what the log says, so a settled group never differs from its replay.

E = ErrorCode


# GroupAppends first: its _append and _append_records are what Rebalance's and OffsetCommits'
# stubs stand for.
class GroupCoordinator(GroupAppends, Rebalance, OffsetCommits):
    """Drive it: `replay` every record of the partition, then `become_coordinator`; afterwards
    `handle_*` per RPC, `tick` by `next_deadline_ms()`, and `on_append_result` for each
    AppendRecords, in append order. JoinGroup, SyncGroup, LeaveGroup and OffsetCommit take a
    `handle` and are answered by a Respond effect of that call or a later one; Heartbeat,
    OffsetFetch, ListGroups and DescribeGroups answer at once. `rng` makes member ids (UUIDs):
    seed it from the OS in production; without it ids come from a counter (tests)."""

    def __init__(
        self,
        partition: int = 0,
        config: GroupConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.partition = partition
        self.config = config or GroupConfig()
        self.status = LOADING
        self.loaded_offset = 0  # the next offset to replay
        self._rng = rng
        self._ids = 0
        self._groups: dict[str, Group] = {}
        self._appends: dict[int, PendingAppend] = {}
        self._next_append_id = 0
        self.pending_txn_offsets = PendingTxnOffsets()

    # -- life cycle -------------------------------------------------------------------------------
    def become_coordinator(self, now_ms: int) -> None:
        """Loading is over: every loaded member gets a full session from now."""
        self.status = ACTIVE
        for group in self._groups.values():
            for m in group.members.values():
                m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms

    def resign(self) -> tuple[Effect, ...]:
        """The partition moved away: answer everything parked NOT_COORDINATOR; drop all state."""
        out: list[Effect] = []
        for group in self._groups.values():
            group.state = DEAD
            for m in group.members.values():
                self._answer_parked(m, E.NOT_COORDINATOR, out)
        for pending in self._appends.values():
            if pending.kind == "offsets":
                out.append(
                    Respond(
                        pending.handle,
                        OffsetCommitResponse({tp: E.NOT_COORDINATOR for tp in pending.answers}),
                    )
                )
            elif pending.kind == "delete":
                out.append(Respond(pending.handle, E.NOT_COORDINATOR))
        self.status, self._groups, self._appends = RESIGNED, {}, {}
        self.pending_txn_offsets = PendingTxnOffsets()
        return tuple(out)

    def _unavailable(self) -> ErrorCode | None:
        return {LOADING: E.COORDINATOR_LOAD_IN_PROGRESS, RESIGNED: E.NOT_COORDINATOR}.get(
            self.status
        )

    # -- JoinGroup --------------------------------------------------------------------------------
    def handle_join_group(
        self, handle: Hashable, req: JoinGroupRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        out: list[Effect] = []
        error = self._unavailable()
        if error is None and not req.group_id:
            error = E.INVALID_GROUP_ID
        if error is None and not (
            self.config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            error = E.INVALID_SESSION_TIMEOUT
        if error is not None:
            return (Respond(handle, JoinGroupResponse(error, req.member_id)),)
        group = self._groups.get(req.group_id)
        if req.member_id == UNKNOWN_MEMBER_ID:
            if group is None:
                group = self._groups[req.group_id] = Group(req.group_id)
            self._join_new_member(handle, group, req, now_ms, out)
        else:
            self._join_known_member(handle, group, req, now_ms, out)
        if group is not None:
            self._settle(group, now_ms, out)
            if group.is_blank():
                del self._groups[group.group_id]  # a refused first join leaves nothing behind
        return tuple(out)

    def _join_new_member(self, handle, group: Group, req: JoinGroupRequest, now_ms, out) -> None:
        error = self._join_problem(group, req, None)
        if error is not None:
            out.append(Respond(handle, JoinGroupResponse(error)))
            return
        member_id = self._new_member_id(group, req.client_id)
        if req.group_instance_id is not None and req.group_instance_id in group.static_members:
            self._rejoin_static_member(handle, group, req, member_id, now_ms, out)
        elif req.group_instance_id is None and req.require_known_member_id:
            # KIP-394: the client must come back with this id, so a retry after a lost response
            # does not leave a second, ghost member behind.
            group.pending_members[member_id] = now_ms + req.session_timeout_ms
            out.append(Respond(handle, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id)))
        else:
            self._add_member_and_rebalance(handle, group, req, member_id, now_ms, out)

    def _join_known_member(self, handle, group: Group | None, req, now_ms, out) -> None:
        error = (
            E.UNKNOWN_MEMBER_ID if group is None else self._join_problem(group, req, req.member_id)
        )
        if error is None and req.member_id in group.pending_members:
            del group.pending_members[req.member_id]
            self._add_member_and_rebalance(handle, group, req, req.member_id, now_ms, out)
            return
        if error is None:
            error = self._check_member(group, req.member_id, req.group_instance_id)
        if error is None and group.state == EMPTY:
            error = E.UNKNOWN_MEMBER_ID
        if error is not None:
            out.append(Respond(handle, JoinGroupResponse(error, req.member_id)))
            return
        member = group.members[req.member_id]
        unchanged = member.matches(req.protocols)
        if (
            group.state == PREPARING_REBALANCE
            or not unchanged
            or (group.state == STABLE and group.is_leader(member.member_id))
        ):
            self._update_member_and_rebalance(handle, group, member, req, now_ms, out)
        else:
            # A lost JoinGroup response, asked for again: the same generation, nothing changes.
            member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
            out.append(Respond(handle, self._join_response(group, member)))

    # -- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------------
    def handle_sync_group(
        self, handle: Hashable, req: SyncGroupRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        group = self._groups.get(req.group_id)
        error = self._check_generation(
            group, req.member_id, req.group_instance_id, req.generation_id
        )
        if error is None and (
            (req.protocol_type and req.protocol_type != group.protocol_type)
            or (req.protocol_name and req.protocol_name != group.protocol_name)
        ):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is None and group.state == PREPARING_REBALANCE:
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            return (Respond(handle, SyncGroupResponse(error)),)
        member = group.members[req.member_id]
        group.pending_sync.discard(member.member_id)
        member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
        if group.state == STABLE:
            return (Respond(handle, self._sync_response(group, member)),)
        out: list[Effect] = []
        if member.sync_handle is not None and member.sync_handle != handle:
            out.append(
                Respond(
                    member.sync_handle,
                    SyncGroupResponse(
                        E.REBALANCE_IN_PROGRESS, message="superseded by a newer SyncGroup"
                    ),
                )
            )
        member.sync_handle = handle
        if group.is_leader(member.member_id) and group.storing_generation is None:
            assignments = {m: req.assignments.get(m, b"") for m in group.members}
            group.storing_generation = group.generation_id
            self._append(
                group,
                "assignment",
                [(GroupMetadataKey(group.group_id), group.to_record(assignments, now_ms))],
                out,
                generation=group.generation_id,
            )
        return tuple(out)

    def handle_heartbeat(self, req: HeartbeatRequest, now_ms: int) -> HeartbeatResponse:
        group = self._groups.get(req.group_id)
        error = self._check_generation(
            group, req.member_id, req.group_instance_id, req.generation_id
        )
        if error is not None:
            return HeartbeatResponse(error)
        member = group.members[req.member_id]
        member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
        if group.state == PREPARING_REBALANCE:
            return HeartbeatResponse(E.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(E.NONE)

    def handle_leave_group(
        self, handle: Hashable, req: LeaveGroupRequest, now_ms: int
    ) -> tuple[Effect, ...]:
        group = self._groups.get(req.group_id)
        error = self._unavailable()
        if error is None and group is not None and group.state == DEAD:
            error = E.COORDINATOR_NOT_AVAILABLE
        if error is not None:
            return (Respond(handle, LeaveGroupResponse(error)),)
        if group is None:
            return (
                Respond(
                    handle,
                    LeaveGroupResponse(
                        E.NONE, tuple((m, E.UNKNOWN_MEMBER_ID) for m in req.members)
                    ),
                ),
            )
        out: list[Effect] = []
        results = []
        for ident in req.members:
            member_id, instance_id = ident.member_id, ident.group_instance_id
            if member_id == UNKNOWN_MEMBER_ID:
                # An admin removing a static member by instance id alone.
                member_id = group.static_members.get(instance_id) if instance_id else None
                error = None if member_id else E.UNKNOWN_MEMBER_ID
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
                results.append((ident, E.NONE))
                continue
            else:
                error = self._check_member(group, member_id, instance_id)
            if error is None:
                self._remove_member_and_update_group(group, group.members[member_id], now_ms, out)
            results.append((ident, error or E.NONE))
        self._settle(group, now_ms, out)
        return (Respond(handle, LeaveGroupResponse(E.NONE, tuple(results))),) + tuple(out)

    # -- DeleteGroups -----------------------------------------------------------------------------
    def handle_delete_group(
        self, handle: Hashable, group_id: str, now_ms: int
    ) -> tuple[Effect, ...]:
        """Kafka's deleteGroups for one group: only an Empty group (no members) may go. It is
        Dead while its tombstones (every committed offset, then the group record) are appended,
        so nobody joins a group being deleted; answered by Respond(handle, ErrorCode)."""
        group = self._groups.get(group_id)
        error = self._unavailable() or (None if group_id else E.INVALID_GROUP_ID)
        if error is None and group is None:
            error = E.GROUP_ID_NOT_FOUND
        if error is None and group.state == DEAD:
            error = E.COORDINATOR_NOT_AVAILABLE  # a deletion of it is already under way
        if error is None and group.state != EMPTY:
            error = E.NON_EMPTY_GROUP
        if error is not None:
            return (Respond(handle, error),)
        group.state = DEAD
        # Kafka's deleteAllOffsets: a tombstone for the offsets open transactions hold too (their
        # replay drops them), else a later COMMIT marker would bring them back.
        doomed = set(group.offsets) | self.pending_txn_offsets.partitions_of(group_id)
        records = [
            (OffsetCommitKey(group_id, tp.topic, tp.partition), None) for tp in sorted(doomed)
        ]
        records.append((GroupMetadataKey(group_id), None))
        out: list[Effect] = []
        self._append(group, "delete", records, out, handle=handle)
        return tuple(out)

    def _delete_stored(
        self, group_id: str, pending: PendingAppend, error: ErrorCode, out: list
    ) -> None:
        if error == E.NONE:  # the tombstones' replay removed the group
            out.append(Respond(pending.handle, E.NONE))
            return
        group = self._groups.get(group_id)
        if group is not None and group.state == DEAD:
            group.state = EMPTY  # as it was: an Empty group's members are none to restore
        out.append(Respond(pending.handle, store_error(error, offsets=False)))

    @property
    def num_groups(self) -> int:
        """Groups this coordinator holds (Kafka's GroupMetadataManager NumGroups)."""
        return len(self._groups)

    def list_groups(self, states: tuple[str, ...] | None = None) -> ListGroupsResponse:
        return views.list_groups(self._groups.values(), states, self._unavailable())

    def describe_group(self, group_id: str, end_offsets=None) -> DescribedGroup:
        """`end_offsets` ({TopicPartition: log end offset}), where known, gives each lag."""
        return views.describe_group(
            group_id, self._groups.get(group_id), end_offsets, self._unavailable()
        )
