"""The rebalance machinery under GroupCoordinator (Kafka's validate*, add/update/removeMember,
prepareRebalance, onCompleteJoin, static member replacement and the timers), as a base class."""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from typing import Any

from broker.group.group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    Member,
)
from broker.group.messages import (
    Effect,
    GroupConfig,
    JoinGroupRequest,
    JoinGroupResponse,
    Respond,
    SyncGroupResponse,
)
from broker.group.records import GroupMetadataKey
from clients.errors import ErrorCode

E = ErrorCode
LOADING, ACTIVE, RESIGNED = "loading", "active", "resigned"  # the coordinator's status


class Rebalance:
    """Uses GroupCoordinator's `config`, `status`, `partition`, `_groups`, `_rng`, `_ids`,
    `_append` and `_unavailable`. Every method that may answer parked requests or write records
    adds those effects to `out`."""

    config: GroupConfig
    status: str
    partition: int
    _groups: dict[str, Group]
    _rng: Any
    _ids: int

    def _append(self, group: Group, kind: str, records, out, **extra) -> None:
        raise NotImplementedError

    def _unavailable(self) -> ErrorCode | None:
        raise NotImplementedError

    # -- timers -----------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> tuple[Effect, ...]:
        """Expire MEMBER_ID_REQUIRED members, sessions and pending SyncGroups; complete joins
        whose rebalance timeout (or initial delay) passed."""
        out: list[Effect] = []
        if self.status != ACTIVE:
            return ()
        for group in list(self._groups.values()):
            for member_id, deadline in list(group.pending_members.items()):
                if now_ms >= deadline:
                    del group.pending_members[member_id]
            for member in list(group.members.values()):
                if member.session_expired(now_ms):
                    self._remove_member_and_update_group(group, member, now_ms, out)
            if group.sync_deadline_ms is not None and now_ms >= group.sync_deadline_ms:
                self._expire_pending_sync(group, now_ms, out)
            self._settle(group, now_ms, out)
            if group.is_blank():  # its only MEMBER_ID_REQUIRED joiner never came back
                del self._groups[group.group_id]
        return tuple(out)

    def next_deadline_ms(self) -> int | None:
        """When `tick` next has something to do (None: nothing scheduled)."""
        deadlines = [
            d
            for g in self._groups.values()
            for d in (
                *g.pending_members.values(),
                g.join_deadline_ms,
                g.sync_deadline_ms,
                *(m.heartbeat_deadline_ms for m in g.members.values() if m.session_can_expire),
            )
            if d is not None
        ]
        return min(deadlines, default=None)

    def _expire_pending_sync(self, group: Group, now_ms: int, out: list) -> None:
        """Members that got their JoinGroup answer but sent no SyncGroup within the rebalance
        timeout are dropped (they would hold partitions nobody consumes)."""
        group.sync_deadline_ms = None
        late, group.pending_sync = sorted(group.pending_sync), set()
        if not late or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        for member_id in late:
            self._remove_member(group, group.members[member_id], out)
        self._prepare_rebalance(group, now_ms, out)

    # -- membership -------------------------------------------------------------------------------
    def _check_generation(
        self, group: Group | None, member_id: str, instance_id: str | None, generation_id: int
    ) -> ErrorCode | None:
        """Heartbeat's and SyncGroup's checks (Kafka's validateHeartbeat / validateSyncGroup)."""
        error = self._unavailable()
        if error is None and group is None:
            error = E.UNKNOWN_MEMBER_ID
        if error is None and group.state == DEAD:
            error = E.COORDINATOR_NOT_AVAILABLE
        if error is None:
            error = self._check_member(group, member_id, instance_id)
        if error is None and generation_id != group.generation_id:
            error = E.ILLEGAL_GENERATION
        if error is None and group.state == EMPTY:
            error = E.UNKNOWN_MEMBER_ID
        return error

    def _join_problem(self, group: Group, req: JoinGroupRequest, member_id) -> ErrorCode | None:
        if group.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if not group.supports(req.protocol_type, req.protocols, excluding=member_id):
            return E.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _new_member_id(self, group: Group, client_id: str) -> str:
        while True:
            if self._rng is not None:
                suffix = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
            else:
                self._ids += 1
                suffix = f"{self.partition}-{self._ids}"
            member_id = f"{client_id or 'member'}-{suffix}"
            if member_id not in group.members and member_id not in group.pending_members:
                return member_id

    def _check_member(self, group: Group, member_id: str, instance_id: str | None):
        """Kafka's validateCurrentMember: a static member must still own its instance id."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            return None if current == member_id else E.FENCED_INSTANCE_ID
        return None if member_id in group.members else E.UNKNOWN_MEMBER_ID

    def _add_member_and_rebalance(
        self,
        handle: Hashable,
        group: Group,
        req: JoinGroupRequest,
        member_id: str,
        now_ms: int,
        out: list,
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            tuple(req.protocols),
            join_handle=handle,
            is_new=True,
            heartbeat_deadline_ms=now_ms + self.config.new_member_join_timeout_ms,
        )
        if group.state == PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        if not group.members:
            group.protocol_type = req.protocol_type
        group.add(member)
        self._maybe_prepare_rebalance(group, now_ms, out)

    def _update_member(
        self, member: Member, req: JoinGroupRequest, handle: Hashable, now_ms: int, out: list
    ) -> None:
        if member.join_handle is not None and member.join_handle != handle:
            out.append(
                Respond(
                    member.join_handle,
                    JoinGroupResponse(
                        E.REBALANCE_IN_PROGRESS,
                        member.member_id,
                        message="superseded by a newer JoinGroup from the same member",
                    ),
                )
            )
        member.protocols = tuple(req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_handle = handle
        member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms

    def _update_member_and_rebalance(
        self, handle, group: Group, member: Member, req, now_ms, out
    ) -> None:
        self._update_member(member, req, handle, now_ms, out)
        self._maybe_prepare_rebalance(group, now_ms, out)

    def _answer_parked(self, member: Member, error: ErrorCode, out: list) -> None:
        if member.join_handle is not None:
            out.append(Respond(member.join_handle, JoinGroupResponse(error, member.member_id)))
            member.join_handle = None
        if member.sync_handle is not None:
            out.append(Respond(member.sync_handle, SyncGroupResponse(error)))
            member.sync_handle = None

    def _remove_member(self, group: Group, member: Member, out: list) -> None:
        # Answered UNKNOWN_MEMBER_ID so a client still waiting rejoins from scratch.
        self._answer_parked(member, E.UNKNOWN_MEMBER_ID, out)
        group.remove(member.member_id)

    def _remove_member_and_update_group(
        self, group: Group, member: Member, now_ms: int, out: list
    ) -> None:
        self._remove_member(group, member, out)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now_ms, out)

    def _propagate_error(self, group: Group, error: ErrorCode, out: list) -> None:
        """Kafka's resetAndPropagateAssignmentError: the generation's assignment is void."""
        for m in group.members.values():
            m.assignment = b""
            if m.sync_handle is not None:
                out.append(Respond(m.sync_handle, SyncGroupResponse(error)))
                m.sync_handle = None

    def _rejoin_static_member(self, handle, group: Group, req, new_id: str, now_ms, out) -> None:
        old_id = group.static_members[req.group_instance_id]
        old = group.members[old_id]
        self._answer_parked(old, E.FENCED_INSTANCE_ID, out)
        revert = (old_id, old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(req.group_instance_id, new_id)
        unchanged = member.matches(req.protocols)
        self._update_member(member, req, handle, now_ms, out)
        if group.state == STABLE and unchanged:
            assignments = {m.member_id: m.assignment for m in group.members.values()}
            self._append(
                group,
                "static-rejoin",
                [(GroupMetadataKey(group.group_id), group.to_record(assignments, now_ms))],
                out,
                handle=handle,
                member_id=new_id,
                revert=revert,
            )
        elif group.state in (STABLE, COMPLETING_REBALANCE):
            # CompletingRebalance too: the leader may be assigning to the old member id.
            self._prepare_rebalance(group, now_ms, out)

    def _sync_response(self, group: Group, member: Member) -> SyncGroupResponse:
        return SyncGroupResponse(
            E.NONE, member.assignment, group.protocol_type, group.protocol_name
        )

    def _join_response(self, group: Group, member: Member, skip: bool = False) -> JoinGroupResponse:
        leader = group.is_leader(member.member_id)
        return JoinGroupResponse(
            E.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            group.joined_members() if leader else (),
            skip and leader,
        )

    def _assignment_stored(self, group: Group, pending, error, now_ms, out) -> None:
        if group.state == STABLE and group.generation_id == pending.generation:
            for m in group.members.values():  # replay made it Stable: hand out assignments
                if m.sync_handle is not None:
                    out.append(Respond(m.sync_handle, self._sync_response(group, m)))
                    m.sync_handle = None
                    m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms
        elif (
            error != E.NONE
            and group.state == COMPLETING_REBALANCE
            and group.generation_id == pending.generation
        ):
            group.storing_generation = None
            self._propagate_error(group, store_error(error, offsets=False), out)
            self._prepare_rebalance(group, now_ms, out)

    def _static_rejoin_stored(self, group: Group, pending, error, out) -> None:
        member = group.members.get(pending.member_id)
        if member is None or member.join_handle != pending.handle or group.state != STABLE:
            return  # a rebalance took over; its join completion answers the member
        member.join_handle = None
        if error == E.NONE:
            out.append(Respond(pending.handle, self._join_response(group, member, skip=True)))
            return
        out.append(Respond(pending.handle, JoinGroupResponse(store_error(error, False))))
        old_id, member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = (
            pending.revert
        )
        group.replace_static_member(member.group_instance_id, old_id)

    # -- the rebalance ----------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: list) -> None:
        if group.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            self._prepare_rebalance(group, now_ms, out)

    def _prepare_rebalance(self, group: Group, now_ms: int, out: list) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._propagate_error(group, E.REBALANCE_IN_PROGRESS, out)
        group.pending_sync, group.sync_deadline_ms = set(), None
        group.storing_generation = None
        delay = self.config.initial_rebalance_delay_ms
        if group.state == EMPTY and delay > 0:
            group.join_deadline_ms = now_ms + delay
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
        else:
            group.join_deadline_ms = now_ms + group.rebalance_timeout_ms
            group.initial_delay_remaining_ms = None
        group.new_member_added = False
        group.state = PREPARING_REBALANCE

    def _settle(self, group: Group, now_ms: int, out: list) -> None:
        """Complete the group's join if it can complete now (Kafka's checkAndComplete)."""
        if group.state != PREPARING_REBALANCE:
            return
        remaining = group.initial_delay_remaining_ms
        if remaining is not None:
            # Kafka's InitialDelayedJoin: only the delay ends it, not everyone having joined.
            if now_ms < group.join_deadline_ms:
                return
            if group.new_member_added and remaining > 0:
                delay = self.config.initial_rebalance_delay_ms
                group.join_deadline_ms += min(delay, remaining)
                group.initial_delay_remaining_ms = max(remaining - delay, 0)
                group.new_member_added = False
                return self._settle(group, now_ms, out)
        elif not group.all_joined() and now_ms < group.join_deadline_ms:
            return
        self._complete_join(group, now_ms, out)

    def _complete_join(self, group: Group, now_ms: int, out: list) -> None:
        for m in [
            m for m in group.members.values() if not m.awaiting_join and m.group_instance_id is None
        ]:
            self._remove_member(group, m, out)
        joined = [m for m in group.members.values() if m.awaiting_join]
        if group.members and not joined:
            # Only static members that have not rejoined are left: wait for them again; their
            # sessions end them if they are gone.
            group.join_deadline_ms = now_ms + group.rebalance_timeout_ms
            group.initial_delay_remaining_ms = None
            return
        if group.leader_id is not None and not group.members[group.leader_id].awaiting_join:
            group.leader_id = joined[0].member_id
        group.generation_id += 1
        group.join_deadline_ms = group.initial_delay_remaining_ms = None
        if not group.members:
            group.protocol_name, group.state = None, EMPTY
            self._append(
                group,
                "group",
                [(GroupMetadataKey(group.group_id), group.to_record({}, now_ms))],
                out,
                generation=group.generation_id,
            )
            return
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        for m in group.members.values():
            if m.join_handle is not None:
                out.append(
                    Respond(
                        m.join_handle,
                        JoinGroupResponse(
                            E.NONE,
                            m.member_id,
                            group.generation_id,
                            group.protocol_type,
                            group.protocol_name,
                            group.leader_id,
                            group.joined_members() if group.is_leader(m.member_id) else (),
                        ),
                    )
                )
                m.join_handle = None
            m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms
            m.is_new = False
        group.pending_sync = set(group.members)
        group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms


def store_error(error: ErrorCode, offsets: bool) -> ErrorCode:
    """Kafka's mapping of a failed `__consumer_offsets` append to what the client is told."""
    if error in (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error == E.REQUEST_TIMED_OUT and not offsets:
        return E.REBALANCE_IN_PROGRESS
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.INVALID_COMMIT_OFFSET_SIZE if offsets else E.UNKNOWN_SERVER_ERROR
    return error
