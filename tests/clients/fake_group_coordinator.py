"""An in-process Group servicer for the client tests: Kafka's classic protocol, simplified (join
barrier, leader assigns, session and rebalance timeouts, offsets in memory), on FakeBroker's server.
Not a test module: the group tests import it (and `fake_cluster`) by name."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

from clients.errors import ErrorCode as E
from clients.group.protocol import decode_assignment
from clients.wire import group_pb2 as gp
from clients.wire import group_pb2_grpc


@contextlib.contextmanager
def fake_cluster(partitions: int):
    """A started FakeBroker with topic `t` of `partitions` partitions and a FakeGroupCoordinator
    on its server: yields (broker, coordinator), stops both after."""
    from test_cluster_fakebroker import FakeBroker  # a sibling module, on sys.path like this one

    broker = FakeBroker()
    coordinator = FakeGroupCoordinator(broker)
    broker.start()
    try:
        broker.create("t", partitions)
        yield broker, coordinator
    finally:
        coordinator.stop()
        broker.stop()


EMPTY, PREPARING, COMPLETING, STABLE = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
)


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    protocols: list
    session_ms: int
    rebalance_ms: int
    last_seen: float
    joined: bool = False
    answer: gp.JoinGroupResponse | None = None
    assignment: bytes = b""


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    leader: str = ""
    protocol: str = ""
    members: dict = field(default_factory=dict)
    pending: dict = field(default_factory=dict)  # member ids given by MEMBER_ID_REQUIRED
    offsets: dict = field(default_factory=dict)  # (topic, partition) -> offset
    epochs: dict = field(default_factory=dict)  # (topic, partition) -> committed leader epoch
    deadline: float = 0.0  # of the rebalance under way


class FakeGroupCoordinator(group_pb2_grpc.GroupServicer):
    """Node 0 coordinates every group. Faults: push codes on `errors["JoinGroup"]` (any method
    name) to answer the next calls with them. `log_end(topic, partition)` gives describe's lag."""

    def __init__(self, broker, min_session_timeout_ms: int = 1) -> None:
        self.broker = broker
        self.min_session_timeout_ms = min_session_timeout_ms
        self.cond = threading.Condition()
        self.groups: dict[str, Group] = {}
        self.errors: dict[str, deque] = defaultdict(deque)
        self.calls: Counter = Counter()
        self.commits: list = []  # (group, generation, member, {tp: offset})
        self._ids = itertools.count(1)
        self._stopped = False
        group_pb2_grpc.add_GroupServicer_to_server(self, broker.server)
        self._ticker = threading.Thread(target=self._tick_loop, daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        with self.cond:
            self._stopped = True
            self.cond.notify_all()

    def _injected(self, method: str) -> int:
        self.calls[method] += 1
        q = self.errors.get(method)
        return q.popleft() if q else 0

    # -- membership -------------------------------------------------------------------------
    def JoinGroup(self, req, ctx):
        with self.cond:
            error = self._injected("JoinGroup")
            if error:
                return gp.JoinGroupResponse(error_code=error, member_id=req.member_id)
            if req.session_timeout_ms < self.min_session_timeout_ms:
                return gp.JoinGroupResponse(error_code=E.INVALID_SESSION_TIMEOUT)
            g = self.groups.setdefault(req.group_id, Group(req.group_id))
            instance = req.group_instance_id if req.HasField("group_instance_id") else None
            mid = req.member_id
            now = time.monotonic()
            if not mid:
                mid = f"{req.client_id}-{next(self._ids)}"
                if instance is None:
                    g.pending[mid] = now + req.session_timeout_ms / 1000
                    return gp.JoinGroupResponse(error_code=E.MEMBER_ID_REQUIRED, member_id=mid)
                for old in [m for m in g.members.values() if m.instance_id == instance]:
                    del g.members[old.member_id]  # a restarted static member takes its place
                    if g.leader == old.member_id:
                        g.leader = mid
            elif mid not in g.members and mid not in g.pending:
                return gp.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID, member_id=mid)
            g.pending.pop(mid, None)
            m = g.members.get(mid)
            if m is None:
                m = g.members[mid] = Member(mid, instance, req.client_id, [], 0, 0, now)
            m.protocols = [(p.name, p.metadata) for p in req.protocols]
            m.session_ms, m.rebalance_ms, m.last_seen = (
                req.session_timeout_ms,
                req.rebalance_timeout_ms,
                now,
            )
            m.joined, m.answer = True, None
            if g.state != PREPARING:
                self._prepare(g)
            self._maybe_complete(g)
            while m.answer is None and g.members.get(mid) is m and not self._stopped:
                self.cond.wait(0.05)
            if m.answer is None:
                return gp.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID, member_id=mid)
            answer, m.answer = m.answer, None
            return answer

    def _prepare(self, g: Group) -> None:
        g.state = PREPARING
        g.deadline = (
            time.monotonic() + max((m.rebalance_ms for m in g.members.values()), default=0) / 1000
        )

    def _maybe_complete(self, g: Group, force: bool = False) -> None:
        if g.state != PREPARING:
            return
        if force:
            for m in [m for m in g.members.values() if not m.joined]:
                del g.members[m.member_id]
        elif not all(m.joined for m in g.members.values()) or g.pending:
            return
        g.generation += 1
        if not g.members:
            g.state, g.leader, g.protocol = EMPTY, "", ""
            self.cond.notify_all()
            return
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        names = [n for n, _ in g.members[g.leader].protocols]
        g.protocol = next(
            n for n in names if all(n in dict(m.protocols) for m in g.members.values())
        )
        g.state = COMPLETING
        everyone = [
            gp.JoinedMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                metadata=dict(m.protocols)[g.protocol],
            )
            for m in g.members.values()
        ]
        for m in g.members.values():
            m.joined = False
            m.answer = gp.JoinGroupResponse(
                member_id=m.member_id,
                generation_id=g.generation,
                protocol_type="consumer",
                protocol_name=g.protocol,
                leader=g.leader,
                members=everyone if m.member_id == g.leader else [],
            )
        self.cond.notify_all()

    def _check(self, g: Group | None, member_id: str, generation: int) -> int:
        if g is None or member_id not in g.members:
            return E.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return E.ILLEGAL_GENERATION
        return 0

    def SyncGroup(self, req, ctx):
        with self.cond:
            error = self._injected("SyncGroup")
            g = self.groups.get(req.group_id)
            error = error or self._check(g, req.member_id, req.generation_id)
            if not error and g.state == PREPARING:
                error = E.REBALANCE_IN_PROGRESS
            if error:
                return gp.SyncGroupResponse(error_code=error)
            g.members[req.member_id].last_seen = time.monotonic()
            if req.member_id == g.leader and g.state == COMPLETING:
                given = {a.member_id: a.assignment for a in req.assignments}
                for m in g.members.values():
                    m.assignment = given.get(m.member_id, b"")
                g.state = STABLE
                self.cond.notify_all()
            while g.state == COMPLETING and g.generation == req.generation_id and not self._stopped:
                self.cond.wait(0.05)
            m = g.members.get(req.member_id)
            if g.state != STABLE or g.generation != req.generation_id or m is None:
                return gp.SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS)
            return gp.SyncGroupResponse(
                protocol_type="consumer", protocol_name=g.protocol, assignment=m.assignment
            )

    def Heartbeat(self, req, ctx):
        with self.cond:
            error = self._injected("Heartbeat")
            g = self.groups.get(req.group_id)
            error = error or self._check(g, req.member_id, req.generation_id)
            if error:
                return gp.HeartbeatResponse(error_code=error)
            g.members[req.member_id].last_seen = time.monotonic()
            return gp.HeartbeatResponse(
                error_code=E.REBALANCE_IN_PROGRESS if g.state == PREPARING else 0
            )

    def LeaveGroup(self, req, ctx):
        with self.cond:
            error = self._injected("LeaveGroup")
            g = self.groups.get(req.group_id)
            if error or g is None:
                return gp.LeaveGroupResponse(error_code=error)
            for ident in req.members:
                if ident.member_id in g.members:
                    self._remove(g, ident.member_id)
            return gp.LeaveGroupResponse()

    def _remove(self, g: Group, member_id: str) -> None:
        del g.members[member_id]
        if g.state in (STABLE, COMPLETING):
            if g.members:
                self._prepare(g)
            else:
                g.state, g.leader = EMPTY, ""
                g.generation += 1
        self._maybe_complete(g)
        self.cond.notify_all()

    def _tick_loop(self) -> None:
        while True:
            with self.cond:
                if self._stopped:
                    return
                now = time.monotonic()
                for g in list(self.groups.values()):
                    for mid, until in list(g.pending.items()):
                        if now > until:
                            del g.pending[mid]
                            self._maybe_complete(g)
                    for m in list(g.members.values()):
                        if g.state == PREPARING and m.joined:
                            m.last_seen = now  # parked in JoinGroup: alive
                        elif now - m.last_seen > m.session_ms / 1000:
                            self._remove(g, m.member_id)
                    if g.state == PREPARING and now > g.deadline:
                        self._maybe_complete(g, force=True)
                self.cond.wait(0.01)

    # -- offsets and admin ------------------------------------------------------------------
    def FindCoordinator(self, req, ctx):
        error = self._injected("FindCoordinator")
        if error:
            return gp.FindCoordinatorResponse(error_code=error, error_message="injected")
        dead = self.broker.dead_leader  # a killed node not fenced yet coordinates too
        if dead is not None:
            host, port = dead.rsplit(":", 1)
            return gp.FindCoordinatorResponse(node_id=1, host=host, port=int(port))
        return gp.FindCoordinatorResponse(node_id=0, host="127.0.0.1", port=self.broker.port)

    def OffsetCommit(self, req, ctx):
        with self.cond:
            error = self._injected("OffsetCommit")
            g = self.groups.get(req.group_id)
            if not error:
                if req.generation_id < 0 and not req.member_id:
                    error = E.UNKNOWN_MEMBER_ID if g is not None and g.members else 0
                else:
                    error = self._check(g, req.member_id, req.generation_id)
                    if not error and g.state == COMPLETING:
                        error = E.REBALANCE_IN_PROGRESS
            if error:
                return gp.OffsetCommitResponse(
                    partitions=[
                        gp.PartitionError(topic=p.topic, partition=p.partition, error_code=error)
                        for p in req.partitions
                    ]
                )
            g = self.groups.setdefault(req.group_id, Group(req.group_id))
            offsets = {(p.topic, p.partition): p.offset for p in req.partitions}
            g.offsets.update(offsets)
            g.epochs.update({(p.topic, p.partition): p.leader_epoch for p in req.partitions})
            self.commits.append((req.group_id, req.generation_id, req.member_id, offsets))
            if g.members:
                g.members[req.member_id].last_seen = time.monotonic()
            return gp.OffsetCommitResponse(
                partitions=[
                    gp.PartitionError(topic=p.topic, partition=p.partition) for p in req.partitions
                ]
            )

    def OffsetFetch(self, req, ctx):
        with self.cond:
            error = self._injected("OffsetFetch")
            if error:
                return gp.OffsetFetchResponse(error_code=error)
            g = self.groups.get(req.group_id)
            offsets = g.offsets if g else {}
            wanted = (
                sorted(offsets)
                if req.all_partitions
                else [(p.topic, p.partition) for p in req.partitions]
            )
            return gp.OffsetFetchResponse(
                partitions=[
                    gp.FetchedPartition(
                        topic=t,
                        partition=p,
                        offset=offsets.get((t, p), -1),
                        leader_epoch=g.epochs.get((t, p), -1) if g else -1,
                    )
                    for t, p in wanted
                ]
            )

    def ListGroups(self, req, ctx):
        with self.cond:
            return gp.ListGroupsResponse(
                groups=[
                    gp.ListedGroup(
                        group_id=g.group_id, protocol_type="consumer", state=g.state, coordinator=0
                    )
                    for g in self.groups.values()
                    if not req.states or g.state in req.states
                ]
            )

    def _log_end(self, topic: str, partition: int) -> int:
        logs = self.broker.topics.get(topic)
        return logs[partition].end if logs and partition < len(logs) else -1

    def DescribeGroups(self, req, ctx):
        out = []
        with self.cond:
            for gid in req.group_ids:
                g = self.groups.get(gid)
                if g is None:
                    out.append(gp.DescribedGroup(group_id=gid, state="Dead", coordinator=0))
                    continue
                members = []
                for m in g.members.values():
                    tps = decode_assignment(m.assignment).partitions if g.state == STABLE else ()
                    members.append(
                        gp.DescribedMember(
                            member_id=m.member_id,
                            group_instance_id=m.instance_id,
                            client_id=m.client_id,
                            client_host="/127.0.0.1",
                            assignment=m.assignment if g.state == STABLE else b"",
                            assigned_partitions=[
                                gp.TopicPartitionRef(topic=t, partition=p) for t, p in tps
                            ],
                        )
                    )
                offsets = []
                if req.include_offsets:
                    for (t, p), o in sorted(g.offsets.items()):
                        end = self._log_end(t, p)
                        offsets.append(
                            gp.CommittedOffset(
                                topic=t,
                                partition=p,
                                offset=o,
                                leader_epoch=-1,
                                log_end_offset=end,
                                lag=max(0, end - o) if end >= 0 else -1,
                            )
                        )
                out.append(
                    gp.DescribedGroup(
                        group_id=gid,
                        state=g.state,
                        protocol_type="consumer",
                        protocol=g.protocol if g.state == STABLE else "",
                        generation_id=g.generation,
                        leader=g.leader,
                        members=members,
                        offsets=offsets,
                        coordinator=0,
                    )
                )
        return gp.DescribeGroupsResponse(groups=out)

    def DeleteGroups(self, req, ctx):
        out = []
        with self.cond:
            for gid in req.group_ids:
                g = self.groups.get(gid)
                if g is None:
                    code = E.GROUP_ID_NOT_FOUND
                elif g.members:
                    code = E.NON_EMPTY_GROUP
                else:
                    code = 0
                    del self.groups[gid]
                out.append(gp.DeletedGroup(group_id=gid, error_code=code))
        return gp.DeleteGroupsResponse(groups=out)
