"""One group's state on its coordinator (Kafka's GroupMetadata and MemberMetadata): members,
generation, chosen protocol, the rebalance's soft state (parked requests, deadlines), offsets."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from broker.group.messages import JoinedMember, OffsetAndMetadata
from broker.group.records import GroupMetadataValue, MemberMetadataValue
from clients.types import TopicPartition

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    # Soft state, never stored: the parked JoinGroup / SyncGroup, and when the session ends.
    join_handle: Hashable | None = None
    sync_handle: Hashable | None = None
    heartbeat_deadline_ms: int | None = None  # None: loaded, not yet started
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_handle is not None

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def matches(self, protocols) -> bool:
        return tuple(protocols) == self.protocols

    @property
    def session_can_expire(self) -> bool:
        """A member parked in a rebalance is alive by definition (the rebalance and pending-sync
        timeouts bound it), unless it is new: its heartbeat deadline is then no deadline."""
        return self.is_new or not (self.awaiting_join or self.sync_handle is not None)

    def session_expired(self, now_ms: int) -> bool:
        """Kafka's hasSatisfiedHeartbeat, negated."""
        if self.heartbeat_deadline_ms is None or now_ms < self.heartbeat_deadline_ms:
            return False
        return self.session_can_expire


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # MEMBER_ID_REQUIRED: deadline
    pending_sync: set[str] = field(default_factory=set)
    join_deadline_ms: int | None = None
    sync_deadline_ms: int | None = None
    # Kafka's InitialDelayedJoin for a group rebalancing from Empty: wait for more members.
    initial_delay_remaining_ms: int | None = None
    new_member_added: bool = False
    storing_generation: int | None = None  # the leader's assignment is being appended
    stored: GroupMetadataValue | None = None  # the last GroupMetadata record replayed
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)

    # -- views ------------------------------------------------------------------------------------
    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def is_blank(self) -> bool:
        """Nothing to remember: no members (pending or not), no generation, no offsets."""
        return (
            self.state == EMPTY
            and not self.members
            and not self.pending_members
            and not self.offsets
            and self.generation_id == 0
        )

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def supports(self, protocol_type: str, protocols, excluding: str | None = None) -> bool:
        """Can a member with these protocols be in the group: same protocol type, and one
        protocol every other member supports (a rejoining member's old list does not count)."""
        names = [name for name, _ in protocols]
        if not self.members:
            return bool(protocol_type) and bool(names)
        others = [m for m in self.members.values() if m.member_id != excluding]
        return protocol_type == self.protocol_type and any(
            all(n in dict(m.protocols) for m in others) for n in names
        )

    def select_protocol(self) -> str:
        """Each member votes for the first protocol on its list that every member supports; most
        votes wins, ties go to the leader's preference (Kafka leaves ties to map order)."""
        members = list(self.members.values())
        common = [
            n for n, _ in members[0].protocols if all(n in dict(m.protocols) for m in members)
        ]
        votes = {n: 0 for n in common}
        for m in members:
            votes[next(n for n, _ in m.protocols if n in votes)] += 1
        leader = self.members.get(self.leader_id) or members[0]
        order = {n: i for i, (n, _) in enumerate(leader.protocols)}
        return max(votes, key=lambda n: (votes[n], -order.get(n, len(order))))

    def joined_members(self) -> tuple[JoinedMember, ...]:
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    # -- membership -------------------------------------------------------------------------------
    def add(self, member: Member) -> None:
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, new_member_id: str) -> Member:
        """A static member came back with a new member id: it takes over the old one's place,
        assignment and leadership. The caller answers the old id's parked requests."""
        old_id = self.static_members[instance_id]
        member = self.members.pop(old_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_member_id)
        return member

    # -- records ----------------------------------------------------------------------------------
    def to_record(self, assignments: dict[str, bytes], now_ms: int) -> GroupMetadataValue:
        return GroupMetadataValue(
            self.protocol_type or "",
            self.generation_id,
            self.protocol_name,
            self.leader_id if self.members else None,
            now_ms,
            tuple(
                MemberMetadataValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(self.protocol_name),
                    assignments.get(m.member_id, b""),
                )
                for m in self.members.values()
            ),
        )

    def load(self, value: GroupMetadataValue | None, now_ms: int | None = None) -> None:
        """Become what the record says (None: no record): Stable with its members, or Empty.
        Sessions start at `now_ms`, or when the coordinator does (None)."""
        self.stored = value
        self.protocol_type = (value.protocol_type or None) if value else None
        self.generation_id = value.generation if value else 0
        self.protocol_name = value.protocol if value else None
        self.members, self.static_members = {}, {}
        self.leader_id = None
        for m in value.members if value else ():
            self.add(
                Member(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    ((value.protocol or "", m.subscription),),
                    m.assignment,
                    heartbeat_deadline_ms=None if now_ms is None else now_ms + m.session_timeout,
                )
            )
        if value is not None and value.leader in self.members:
            self.leader_id = value.leader
        self.state = STABLE if self.members else EMPTY
