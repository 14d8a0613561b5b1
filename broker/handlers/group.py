"""The consumer group requests, wire-neutral: who may do what to a group (and to the topics of
its offsets), the request checks, which coordinator core answers (NOT_COORDINATOR when it is not
this broker's), how long a request may be parked there, and each error's message. Requests and
answers are broker/group/messages.py's (the core's) and broker/handlers/group_messages.py's."""

from __future__ import annotations

import dataclasses
import math

from broker.edge.request_limits import Refused
from broker.group import messages as m
from broker.group import request_checks as checks
from broker.group.coordinator_registry import GroupCoordinators
from broker.group.driver import CoordinatorDriver
from broker.group.hints import message
from broker.handlers import group_messages as g
from broker.handlers.txn_offset_verification import Verified, still_valid, verify_offsets
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.verification import TxnVerifier
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import ANONYMOUS, RequestContext
from clients.types import TopicPartition
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

E = ErrorCode
# A JoinGroup is parked until the rebalance completes: at most its rebalance timeout. Past that
# (plus this slack) the client has given up anyway; answering ends the parked call.
PARK_SLACK_S = 5.0
WRITE_TIMEOUT_S = 30.0  # SyncGroup, LeaveGroup, OffsetCommit, DeleteGroups wait for appends

# A whole-request error, when every partition carries it: the client looks the coordinator up.
_WHOLE = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS})


def _hinted(answer):
    """A core's answer (Join, Sync, Heartbeat, Leave) with the message a person can act on."""
    return dataclasses.replace(answer, message=message(answer.error, answer.message))


def _refused_commit(req, code: int, text: str) -> g.OffsetCommitResponse:
    # Every partition carries the refusal too: clients read the per-partition codes.
    return g.OffsetCommitResponse(
        tuple(g.PartitionError(t, p, code, text) for t, p in req.offsets), code, text
    )


def _commit_answer(partitions: dict[TopicPartition, int]) -> g.OffsetCommitResponse:
    codes = set(partitions.values())
    whole = codes.pop() if len(codes) == 1 and next(iter(codes)) in _WHOLE else 0
    return g.OffsetCommitResponse(
        tuple(
            g.PartitionError(t, p, code, message(code))
            for (t, p), code in sorted(partitions.items())
        ),
        whole,
        message(whole),
    )


class GroupHandler:
    def __init__(
        self,
        coordinators: GroupCoordinators,
        replicas: ReplicaManager,
        node_id: int,
        *,
        authorizer: RequestAuthorizer = OPEN,
        transactions: TransactionCoordinators | None = None,
        verifier: TxnVerifier | None = None,
    ) -> None:
        """`transactions` answers FindCoordinator key_type 1 (none: COORDINATOR_NOT_AVAILABLE).
        `verifier` checks a TxnOffsetCommit with its transaction coordinator first
        (txn_offset_verification.py; none: not checked)."""
        self.coordinators = coordinators
        self.transactions = transactions
        self.verifier = verifier
        self.replicas = replicas
        self.node_id = node_id
        self.authz = authorizer

    def _driver(self, group_id: str) -> CoordinatorDriver | None:
        return self.coordinators.driver_for(group_id)

    def _screen(
        self, check, req, who: RequestContext, operation: Op = Op.READ
    ) -> tuple[int, str] | None:
        """Why `req` is refused before any core sees it: its fields, then the group's ACL."""
        try:
            check(req)
        except Refused as refused:
            return refused.code, refused.message
        return self.authz.denial(operation, R.GROUP, req.group_id, who)

    async def find_coordinator(
        self, req: g.FindCoordinatorRequest, who: RequestContext = ANONYMOUS
    ) -> g.FindCoordinatorResponse:
        try:
            checks.FindCoordinator(req)
        except Refused as refused:
            return g.FindCoordinatorResponse(refused.code, refused.message)
        transaction = req.key_type == g.TRANSACTION_KEY
        denial = self.authz.denial(
            Op.DESCRIBE, R.TRANSACTIONAL_ID if transaction else R.GROUP, req.key, who
        )
        if denial is not None:
            return g.FindCoordinatorResponse(*denial)
        try:
            if not transaction:
                broker = await self.coordinators.find_coordinator(req.key)
            elif self.transactions is None:
                raise KraftError(
                    E.COORDINATOR_NOT_AVAILABLE, "this node coordinates no transactions"
                )
            else:
                broker = await self.transactions.find_coordinator(req.key)
        except KraftError as exc:
            code = (
                exc.code
                if exc.code in (E.INVALID_GROUP_ID, E.INVALID_REQUEST)
                else E.COORDINATOR_NOT_AVAILABLE
            )
            return g.FindCoordinatorResponse(code, exc.message)
        return g.FindCoordinatorResponse(
            node_id=broker.broker_id, host=broker.host, port=broker.port
        )

    async def _parked(self, group_id: str, call, fallback, timeout_s: float):
        """The core's answer to a request it may park (`call(core, handle, now_ms)`), `fallback`
        if the driver stops or `timeout_s` passes first; a NOT_COORDINATOR `fallback` with a
        hint when this broker does not coordinate the group."""
        driver = self._driver(group_id)
        if driver is None:
            return _hinted(
                dataclasses.replace(
                    fallback, error=E.NOT_COORDINATOR, message=f"group '{group_id}'"
                )
            )
        return _hinted(
            await driver.ask(
                lambda handle, now: call(driver.core, handle, now), fallback, timeout_s
            )
        )

    async def join_group(
        self, req: m.JoinGroupRequest, who: RequestContext = ANONYMOUS
    ) -> m.JoinGroupResponse:
        refused = self._screen(checks.JoinGroup, req, who)
        if refused is not None:
            return m.JoinGroupResponse(refused[0], message=refused[1])
        return await self._parked(
            req.group_id,
            lambda core, handle, now: core.handle_join_group(handle, req, now),
            m.JoinGroupResponse(E.NOT_COORDINATOR, req.member_id),
            max(req.rebalance_timeout_ms, req.session_timeout_ms) / 1000 + PARK_SLACK_S,
        )

    async def sync_group(
        self, req: m.SyncGroupRequest, who: RequestContext = ANONYMOUS
    ) -> m.SyncGroupResponse:
        refused = self._screen(checks.SyncGroup, req, who)
        if refused is not None:
            return m.SyncGroupResponse(refused[0], message=refused[1])
        # Parked until the leader's assignment is stored: the core bounds it by the rebalance
        # timeout.
        return await self._parked(
            req.group_id,
            lambda core, handle, now: core.handle_sync_group(handle, req, now),
            m.SyncGroupResponse(E.REBALANCE_IN_PROGRESS),
            math.inf,
        )

    def heartbeat(
        self, req: m.HeartbeatRequest, who: RequestContext = ANONYMOUS
    ) -> m.HeartbeatResponse:
        """Synchronous: the core answers at once."""
        refused = self._screen(checks.Heartbeat, req, who)
        if refused is not None:
            return m.HeartbeatResponse(refused[0], message=refused[1])
        driver = self._driver(req.group_id)
        if driver is None:
            return _hinted(
                m.HeartbeatResponse(E.NOT_COORDINATOR, message=f"group '{req.group_id}'")
            )
        answer = driver.core.handle_heartbeat(req, driver.now())
        driver.poke()  # a session deadline moved
        return _hinted(answer)

    async def leave_group(
        self, req: m.LeaveGroupRequest, who: RequestContext = ANONYMOUS
    ) -> m.LeaveGroupResponse:
        refused = self._screen(checks.LeaveGroup, req, who)
        if refused is not None:
            return m.LeaveGroupResponse(refused[0], message=refused[1])
        return await self._parked(
            req.group_id,
            lambda core, handle, now: core.handle_leave_group(handle, req, now),
            m.LeaveGroupResponse(E.NOT_COORDINATOR),
            WRITE_TIMEOUT_S,
        )

    async def offset_commit(
        self, req: m.OffsetCommitRequest, who: RequestContext = ANONYMOUS
    ) -> g.OffsetCommitResponse:
        try:
            checks.OffsetCommit(req)
        except Refused as refused:
            return _refused_commit(req, refused.code, refused.message)
        denial = self.authz.denial(Op.READ, R.GROUP, req.group_id, who)
        if denial is not None:
            return g.OffsetCommitResponse((), *denial)
        return await self._commit(req, lambda core: core.handle_offset_commit, who)

    async def txn_offset_commit(
        self, req: m.TxnOffsetCommitRequest, who: RequestContext = ANONYMOUS
    ) -> g.OffsetCommitResponse:
        """Kafka: Write on the transactional id, Read on the group and on each topic."""
        try:
            checks.TxnOffsetCommit(req)
        except Refused as refused:
            return _refused_commit(req, refused.code, refused.message)
        denial = self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id, who)
        if denial is not None:
            return _refused_commit(req, *denial)
        denial = self.authz.denial(Op.READ, R.GROUP, req.group_id, who)
        if denial is not None:
            return g.OffsetCommitResponse((), *denial)
        driver = self._driver(req.group_id)
        if self.verifier is None or driver is None:
            return await self._commit(req, lambda core: core.handle_txn_offset_commit, who)
        verified = await verify_offsets(self.verifier, self.replicas, driver.partition, req)
        if not isinstance(verified, Verified):
            code, text = verified  # per partition, as Kafka's TxnOffsetCommitResponse has it
            return g.OffsetCommitResponse(
                tuple(g.PartitionError(t, p, code, text) for t, p in sorted(req.offsets))
            )
        return await self._commit(
            req, lambda core: core.handle_txn_offset_commit, who, (driver, verified)
        )

    async def _commit(
        self, req, handler, who: RequestContext, verified=None
    ) -> g.OffsetCommitResponse:
        """OffsetCommit and TxnOffsetCommit: `handler(core)` takes (handle, req, now_ms).
        `verified`: (the driver it was checked on, Verified) for a TxnOffsetCommit its
        transaction coordinator confirmed."""
        # Kafka: committing a partition's offset needs Read on its topic too.
        denied = {
            tp: E.TOPIC_AUTHORIZATION_FAILED
            for tp in req.offsets
            if not self.authz.allowed(Op.READ, R.TOPIC, tp.topic, who)
        }
        if denied:
            req = dataclasses.replace(
                req, offsets={tp: o for tp, o in req.offsets.items() if tp not in denied}
            )
        driver = self._driver(req.group_id)
        if driver is None:
            return _commit_answer({tp: E.NOT_COORDINATOR for tp in req.offsets} | denied)
        if not req.offsets:
            return _commit_answer(denied)
        if verified is not None and verified[0] is not driver:
            # Leadership moved while the transaction coordinator was asked: find it again.
            return _commit_answer({tp: E.NOT_COORDINATOR for tp in req.offsets} | denied)

        def call(handle, now):
            if verified is not None and not still_valid(self.replicas, verified[1]):
                code = E.CONCURRENT_TRANSACTIONS  # a marker ended it meanwhile: check again
                return (
                    m.Respond(handle, m.OffsetCommitResponse(dict.fromkeys(req.offsets, code))),
                )
            return handler(driver.core)(handle, req, now)

        answer = await driver.ask(
            call,
            m.OffsetCommitResponse({tp: E.REQUEST_TIMED_OUT for tp in req.offsets}),
            WRITE_TIMEOUT_S,
        )
        return _commit_answer(dict(answer.partitions) | denied)

    def offset_fetch(
        self, req: m.OffsetFetchRequest, who: RequestContext = ANONYMOUS
    ) -> g.OffsetFetchResponse:
        """Synchronous: the core answers from its state."""
        refused = self._screen(checks.OffsetFetch, req, who)
        if refused is not None:
            return g.OffsetFetchResponse((), *refused)
        driver = self._driver(req.group_id)
        if driver is None:
            return g.OffsetFetchResponse(
                (), E.NOT_COORDINATOR, message(E.NOT_COORDINATOR, f"group '{req.group_id}'")
            )
        answer = driver.core.handle_offset_fetch(req)
        # Kafka: offsets of topics the caller may not Describe are left out.
        return g.OffsetFetchResponse(
            tuple(
                g.FetchedPartition(t, p, f.offset, f.leader_epoch, f.metadata, f.error)
                for (t, p), f in sorted(answer.partitions.items())
                if not self.authz.enabled or self.authz.allowed(Op.DESCRIBE, R.TOPIC, t, who)
            ),
            answer.error,
            message(answer.error),
        )

    def list_groups(
        self, req: g.ListGroupsRequest, who: RequestContext = ANONYMOUS
    ) -> g.ListGroupsResponse:
        """The groups this broker coordinates; the admin client asks every broker."""
        try:
            checks.ListGroups(req)
        except Refused as refused:
            return g.ListGroupsResponse((), refused.code, refused.message)
        states = tuple(req.states) or None
        groups = []
        every = self.authz.allowed(Op.DESCRIBE, R.CLUSTER, who=who)  # else the Describe-able
        for driver in self.coordinators.drivers():
            listed = driver.core.list_groups(states)
            if listed.error:  # still loading: say so rather than list too few
                return g.ListGroupsResponse((), listed.error, message(listed.error))
            groups.extend(
                g.ListedGroup(x.group_id, x.protocol_type, x.state, self.node_id)
                for x in listed.groups
                if every or self.authz.allowed(Op.DESCRIBE, R.GROUP, x.group_id, who)
            )
        return g.ListGroupsResponse(tuple(sorted(groups, key=lambda x: x.group_id)))

    def describe_groups(
        self, req: g.DescribeGroupsRequest, who: RequestContext = ANONYMOUS
    ) -> g.DescribeGroupsResponse:
        """Synchronous: each core describes its group from its state."""
        out = []
        for group_id in req.group_ids:
            denial = self._group_denial(group_id, Op.DESCRIBE, who)
            if denial is not None:
                out.append(g.DescribedGroup(group_id, self.node_id, *denial))
                continue
            driver = self._driver(group_id)
            if driver is None:
                out.append(
                    g.DescribedGroup(
                        group_id,
                        self.node_id,
                        E.NOT_COORDINATOR,
                        message(E.NOT_COORDINATOR, f"group '{group_id}'"),
                    )
                )
                continue
            ends = self._log_ends(driver, group_id) if req.include_offsets else {}
            described = driver.core.describe_group(group_id, ends)
            if not req.include_offsets:
                described = dataclasses.replace(described, offsets=())
            out.append(
                g.DescribedGroup(
                    group_id,
                    self.node_id,
                    described.error,
                    message(described.error),
                    described.state,
                    described,
                    ends,
                )
            )
        return g.DescribeGroupsResponse(tuple(out))

    def _group_denial(
        self, group_id: str, operation: Op, who: RequestContext
    ) -> tuple[int, str] | None:
        """Why one group of a DescribeGroups or DeleteGroups is refused: a bad group id (checked
        first: a megabyte id is not worth an ACL lookup), then the ACLs."""
        refused = checks.group_id_problem(group_id)
        if refused is not None:
            return refused.code, refused.message
        return self.authz.denial(operation, R.GROUP, group_id, who)

    def _log_ends(self, driver: CoordinatorDriver, group_id: str) -> dict[TopicPartition, int]:
        """The lag's other half where this broker knows it: the high watermark (what a consumer
        can reach) of the group's partitions it leads."""
        committed = driver.core.handle_offset_fetch(m.OffsetFetchRequest(group_id)).partitions
        ends = {}
        for tp in committed:
            hosted = self.replicas.get(tp.topic, tp.partition)
            if hosted is not None and hosted.is_leader:
                ends[tp] = hosted.high_watermark
        return ends

    async def delete_groups(
        self, req: g.DeleteGroupsRequest, who: RequestContext = ANONYMOUS
    ) -> g.DeleteGroupsResponse:
        out = []
        for group_id in req.group_ids:
            denial = self._group_denial(group_id, Op.DELETE, who)
            if denial is not None:
                out.append(g.GroupResult(group_id, *denial))
                continue
            driver = self._driver(group_id)
            if driver is None:
                code, detail = E.NOT_COORDINATOR, f"group '{group_id}'"
            else:
                code = await driver.ask(
                    lambda handle, now: driver.core.handle_delete_group(handle, group_id, now),
                    E.NOT_COORDINATOR,
                    WRITE_TIMEOUT_S,
                )
                detail = ""
            out.append(g.GroupResult(group_id, code, message(code, detail)))
        return g.DeleteGroupsResponse(tuple(out))
