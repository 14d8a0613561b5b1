"""A plain-loop driver for GroupCoordinator in tests: a fake clock, a list standing in for the
`__consumer_offsets` partition, every answer by handle (each handle answered exactly once)."""

from __future__ import annotations

from broker.group.messages import (
    AppendRecords,
    GroupConfig,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetAndMetadata,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Respond,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from broker.group.partition_coordinator import GroupCoordinator
from clients.errors import ErrorCode
from clients.types import TopicPartition

SESSION_MS = 10_000
REBALANCE_MS = 30_000
PROTOCOLS = (("range", b"sub"),)
CONFIG = GroupConfig(initial_rebalance_delay_ms=0)


class Harness:
    def __init__(self, config: GroupConfig = CONFIG, auto_commit: bool = True) -> None:
        self.config = config
        self.c = GroupCoordinator(0, config)
        self.c.become_coordinator(0)
        self.now = 0
        self.log: list[tuple[bytes, bytes | None]] = []
        # Transactions: the producer id of each transactional record's offset, and the end
        # markers by offset (producer id, committed); a marker takes an offset of the log too.
        self.producer_of: dict[int, int] = {}
        self.markers: dict[int, tuple[int, bool]] = {}
        self.answers: dict[int, object] = {}
        self.pending: list[AppendRecords] = []
        self.auto_commit = auto_commit
        self._handles = 0

    # -- plumbing ---------------------------------------------------------------------------------
    def run(self, effects) -> None:
        for e in effects:
            if isinstance(e, Respond):
                assert e.handle not in self.answers, f"handle {e.handle} answered twice"
                self.answers[e.handle] = e.response
            else:
                assert isinstance(e, AppendRecords)
                self.pending.append(e)
        if self.auto_commit:
            self.complete_appends()

    def complete_appends(self, error: ErrorCode = ErrorCode.NONE) -> None:
        while self.pending:
            e = self.pending.pop(0)
            base = len(self.log)
            if error == ErrorCode.NONE:
                self.log.extend(e.records)
                if e.producer_id >= 0:
                    self.producer_of.update(
                        (base + i, e.producer_id) for i in range(len(e.records))
                    )
            self.run(self.c.on_append_result(e.append_id, error, self.now, base))

    def _handle(self) -> int:
        self._handles += 1
        return self._handles

    def answer(self, handle: int):
        return self.answers.get(handle)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.run(self.c.tick(self.now))

    def fresh(self) -> GroupCoordinator:
        """A new coordinator that loads this partition's log, as after a failover."""
        c = GroupCoordinator(0, self.config)
        for offset, (key, value) in enumerate(self.log):
            if offset in self.markers:
                c.replay_txn_marker(*self.markers[offset], offset)
            else:
                c.replay(key, value, offset, self.producer_of.get(offset, -1))
        c.become_coordinator(self.now)
        return c

    # -- requests ---------------------------------------------------------------------------------
    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        instance: str | None = None,
        protocols=PROTOCOLS,
        session: int = SESSION_MS,
        rebalance: int = REBALANCE_MS,
        client_id: str = "c",
        protocol_type: str = "consumer",
    ) -> int:
        h = self._handle()
        req = JoinGroupRequest(
            group,
            member_id,
            protocol_type,
            tuple(protocols),
            session,
            rebalance,
            instance,
            client_id,
            "/10.0.0.1",
        )
        self.run(self.c.handle_join_group(h, req, self.now))
        return h

    def join_new(self, group: str, **kw) -> int:
        """A dynamic member's first join: MEMBER_ID_REQUIRED, then again with that id."""
        if kw.get("instance") is not None:
            return self.join(group, **kw)
        first = self.answer(self.join(group, **kw))
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED, first
        return self.join(group, first.member_id, **kw)

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments=None,
        *,
        instance: str | None = None,
    ) -> int:
        h = self._handle()
        req = SyncGroupRequest(
            group, generation, member_id, instance, assignments=dict(assignments or {})
        )
        self.run(self.c.handle_sync_group(h, req, self.now))
        return h

    def heartbeat(
        self, group: str, member_id: str, generation: int, *, instance: str | None = None
    ) -> ErrorCode:
        req = HeartbeatRequest(group, generation, member_id, instance)
        return self.c.handle_heartbeat(req, self.now).error

    def leave(self, group: str, *members: MemberIdentity | str) -> object:
        h = self._handle()
        idents = tuple(m if isinstance(m, MemberIdentity) else MemberIdentity(m) for m in members)
        self.run(self.c.handle_leave_group(h, LeaveGroupRequest(group, idents), self.now))
        return self.answer(h)

    def commit(
        self,
        group: str,
        offsets: dict,
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
    ) -> int:
        h = self._handle()
        req = OffsetCommitRequest(
            group,
            {
                TopicPartition(*tp): (
                    o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                )
                for tp, o in offsets.items()
            },
            generation,
            member_id,
            instance,
        )
        self.run(self.c.handle_offset_commit(h, req, self.now))
        return h

    def txn_commit(
        self,
        group: str,
        offsets: dict,
        producer_id: int,
        epoch: int = 0,
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
    ) -> int:
        h = self._handle()
        req = TxnOffsetCommitRequest(
            group,
            "txn-1",
            producer_id,
            epoch,
            {TopicPartition(*tp): OffsetAndMetadata(o) for tp, o in offsets.items()},
            generation,
            member_id,
            instance,
        )
        self.run(self.c.handle_txn_offset_commit(h, req, self.now))
        return h

    def marker(self, producer_id: int, committed: bool) -> None:
        """The partition leader appended (and committed) a transaction's end marker."""
        offset = len(self.log)
        self.log.append((b"", None))
        self.markers[offset] = (producer_id, committed)
        self.c.replay_txn_marker(producer_id, committed, offset)

    def delete(self, group: str) -> int:
        h = self._handle()
        self.run(self.c.handle_delete_group(h, group, self.now))
        return h

    def fetch(self, group: str, partitions=None, require_stable: bool = False):
        return self.c.handle_offset_fetch(OffsetFetchRequest(group, partitions, require_stable))

    def state(self, group: str) -> str:
        return self.c.describe_group(group).state

    def generation(self, group: str) -> int:
        return self.c.describe_group(group).generation_id

    # -- whole steps ------------------------------------------------------------------------------
    def form_group(self, group: str, n: int, **kw) -> tuple[list[str], int]:
        """n dynamic members join (MEMBER_ID_REQUIRED dance), rejoin until one join completes
        with all of them, the leader assigns b"a-<member>" to each, everyone syncs: Stable.
        Returns (member ids, generation)."""
        handles = [self.join_new(group, **kw) for _ in range(n)]
        latest = self.rejoin_until_complete(group, handles, **kw)
        members = [a.member_id for a in latest]
        generation = latest[0].generation_id
        self.complete_sync(group, members, generation)
        return members, generation

    def rejoin_until_complete(self, group: str, handles: list[int], **kw) -> list:
        """Members whose join was answered while a newer rebalance began rejoin (as a client
        would on REBALANCE_IN_PROGRESS), until one generation includes them all."""
        for _ in range(len(handles) + 2):
            answers = [self.answer(h) for h in handles]
            if self.state(group) == "CompletingRebalance" and all(
                a is not None and a.generation_id == self.generation(group) for a in answers
            ):
                assert all(a.error == ErrorCode.NONE for a in answers), answers
                return answers
            for i, a in enumerate(answers):
                if a is not None:
                    assert a.error == ErrorCode.NONE, a
                    handles[i] = self.join(group, a.member_id, **kw)
        raise AssertionError(f"the join never completed with every member: {answers}")

    def complete_sync(
        self, group: str, members: list[str], generation: int, leader: str | None = None
    ) -> None:
        leader = leader or self.c.describe_group(group).leader
        order = [leader] + [m for m in members if m != leader]
        for m in order:
            assignments = {x: b"a-" + x.encode() for x in members} if m == leader else {}
            answer = self.answer(self.sync(group, m, generation, assignments))
            assert answer is not None and answer.error == ErrorCode.NONE, (m, answer)
        assert self.state(group) == "Stable"
