"""The Group gRPC service: protobuf in and out at this edge (broker/group/wire.py), each request
to the driver of the group's `__consumer_offsets` partition. A broker that does not coordinate
the group answers NOT_COORDINATOR and the client looks the coordinator up again."""
from __future__ import annotations

import dataclasses
import math

from broker.group.driver import CoordinatorDriver
from broker.group import messages as m
from broker.group import request_checks as checks
from broker.group.coordinators import GroupCoordinators
from broker.group.wire import (commit_request, commit_response, described_group, fetch_request,
                               fetch_response, heartbeat_request, heartbeat_response,
                               join_request, join_response, leave_request, leave_response,
                               message, sync_request, sync_response, txn_commit_request)
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.transaction.coordinators import TransactionCoordinators
from broker.server.request_limits import Refused, checked
from clients.errors import ErrorCode, KraftError
from clients.types import TopicPartition
from clients.wire import group_pb2 as pb
from kraft.security.acl import Operation as Op, ResourceType as R

E = ErrorCode
# A JoinGroup is parked until the rebalance completes: at most its rebalance timeout. Past that
# (plus this slack) the client has given up anyway; answering ends the parked call.
PARK_SLACK_S = 5.0
TRANSACTION_KEY = 1          # FindCoordinator key_type: a transactional id
WRITE_TIMEOUT_S = 30.0       # SyncGroup, LeaveGroup, OffsetCommit, DeleteGroups wait for appends


def _refuse_commit(request: pb.OffsetCommitRequest, refused: Refused) -> pb.OffsetCommitResponse:
    # Every partition carries the refusal too: clients read the per-partition codes.
    return pb.OffsetCommitResponse(
        error_code=refused.code, error_message=refused.message,
        partitions=[pb.PartitionError(topic=p.topic, partition=p.partition,
                                      error_code=refused.code, error_message=refused.message)
                    for p in request.partitions])


def _not_coordinator(group_id: str) -> str:
    """NOT_COORDINATOR's message for a response built here; responses encoded by group_wire get
    the same hint from it, with `group '<id>'` as their detail."""
    return message(E.NOT_COORDINATOR, f"group '{group_id}'")


class GroupServicer:
    def __init__(self, coordinators: GroupCoordinators, replicas: ReplicaManager,
                 node_id: int, authorizer: RequestAuthorizer = OPEN,
                 transactions: TransactionCoordinators | None = None) -> None:
        """`transactions` answers FindCoordinator key_type 1 (none: COORDINATOR_NOT_AVAILABLE)."""
        self.coordinators = coordinators
        self.transactions = transactions
        self.replicas = replicas
        self.node_id = node_id
        self.authz = authorizer

    def _refused(self, response_cls, group_id: str, operation: Op = Op.READ):
        """`response_cls` carrying GROUP_AUTHORIZATION_FAILED if the caller may not do
        `operation` on the group, else None."""
        denial = self.authz.denial(operation, R.GROUP, group_id)
        if denial is None:
            return None
        return response_cls(error_code=denial[0], error_message=denial[1])

    def _driver(self, group_id: str) -> CoordinatorDriver | None:
        return self.coordinators.driver_for(group_id)

    @checked(checks.FindCoordinator, lambda _request, refused: pb.FindCoordinatorResponse(
        error_code=refused.code, error_message=refused.message, node_id=-1))
    async def FindCoordinator(self, request: pb.FindCoordinatorRequest) -> pb.FindCoordinatorResponse:
        transaction = request.key_type == TRANSACTION_KEY
        denial = self.authz.denial(Op.DESCRIBE, R.TRANSACTIONAL_ID if transaction else R.GROUP,
                                   request.key)
        if denial is not None:
            return pb.FindCoordinatorResponse(error_code=denial[0], error_message=denial[1],
                                              node_id=-1)
        try:
            if not transaction:
                broker = await self.coordinators.find_coordinator(request.key)
            elif self.transactions is None:
                raise KraftError(E.COORDINATOR_NOT_AVAILABLE, "this node coordinates no "
                                                              "transactions")
            else:
                broker = await self.transactions.find_coordinator(request.key)
        except KraftError as exc:
            code = exc.code if exc.code in (E.INVALID_GROUP_ID, E.INVALID_REQUEST) \
                else E.COORDINATOR_NOT_AVAILABLE
            return pb.FindCoordinatorResponse(error_code=code, error_message=exc.message,
                                              node_id=-1)
        return pb.FindCoordinatorResponse(node_id=broker.broker_id, host=broker.host,
                                          port=broker.port)

    async def _parked(self, group_id: str, call, fallback, timeout_s: float):
        """The core's answer to a request it may park (`call(core, handle, now_ms)`), `fallback`
        if the driver stops or `timeout_s` passes first; a NOT_COORDINATOR `fallback` with a
        hint when this broker does not coordinate the group."""
        driver = self._driver(group_id)
        if driver is None:
            return dataclasses.replace(fallback, error=E.NOT_COORDINATOR,
                                       message=f"group '{group_id}'")
        return await driver.ask(lambda handle, now: call(driver.core, handle, now), fallback,
                                timeout_s)

    @checked(checks.JoinGroup, pb.JoinGroupResponse)
    async def JoinGroup(self, request: pb.JoinGroupRequest, *,
                        require_known_member_id: bool = True) -> pb.JoinGroupResponse:
        """`require_known_member_id`: the MEMBER_ID_REQUIRED round first (KIP-394); Kafka's
        JoinGroup v0-3 clients know no such round (the Kafka listener turns it off for them)."""
        refused = self._refused(pb.JoinGroupResponse, request.group_id)
        if refused is not None:
            return refused
        req = dataclasses.replace(join_request(request),
                                  require_known_member_id=require_known_member_id)
        return join_response(await self._parked(
            req.group_id, lambda core, handle, now: core.handle_join_group(handle, req, now),
            m.JoinGroupResponse(E.NOT_COORDINATOR, req.member_id),
            max(req.rebalance_timeout_ms, req.session_timeout_ms) / 1000 + PARK_SLACK_S))

    @checked(checks.SyncGroup, pb.SyncGroupResponse)
    async def SyncGroup(self, request: pb.SyncGroupRequest) -> pb.SyncGroupResponse:
        refused = self._refused(pb.SyncGroupResponse, request.group_id)
        if refused is not None:
            return refused
        req = sync_request(request)
        # Parked until the leader's assignment is stored: the core bounds it by the rebalance
        # timeout.
        return sync_response(await self._parked(
            req.group_id, lambda core, handle, now: core.handle_sync_group(handle, req, now),
            m.SyncGroupResponse(E.REBALANCE_IN_PROGRESS), math.inf))

    @checked(checks.Heartbeat, pb.HeartbeatResponse)
    async def Heartbeat(self, request: pb.HeartbeatRequest) -> pb.HeartbeatResponse:
        refused = self._refused(pb.HeartbeatResponse, request.group_id)
        if refused is not None:
            return refused
        driver = self._driver(request.group_id)
        if driver is None:
            return pb.HeartbeatResponse(error_code=E.NOT_COORDINATOR,
                                        error_message=_not_coordinator(request.group_id))
        answer = driver.core.handle_heartbeat(heartbeat_request(request), driver.now())
        driver.poke()        # a session deadline moved
        return heartbeat_response(answer)

    @checked(checks.LeaveGroup, pb.LeaveGroupResponse)
    async def LeaveGroup(self, request: pb.LeaveGroupRequest) -> pb.LeaveGroupResponse:
        refused = self._refused(pb.LeaveGroupResponse, request.group_id)
        if refused is not None:
            return refused
        req = leave_request(request)
        return leave_response(await self._parked(
            req.group_id, lambda core, handle, now: core.handle_leave_group(handle, req, now),
            m.LeaveGroupResponse(E.NOT_COORDINATOR), WRITE_TIMEOUT_S))

    @checked(checks.OffsetCommit, _refuse_commit)
    async def OffsetCommit(self, request: pb.OffsetCommitRequest) -> pb.OffsetCommitResponse:
        refused = self._refused(pb.OffsetCommitResponse, request.group_id)
        if refused is not None:
            return refused
        return await self._commit(commit_request(request), lambda core: core.handle_offset_commit)

    async def _commit(self, req, handler) -> pb.OffsetCommitResponse:
        """OffsetCommit and TxnOffsetCommit: `handler(core)` takes (handle, req, now_ms)."""
        # Kafka: committing a partition's offset needs Read on its topic too.
        denied = {tp: E.TOPIC_AUTHORIZATION_FAILED for tp in req.offsets
                  if not self.authz.allowed(Op.READ, R.TOPIC, tp.topic)}
        if denied:
            req = dataclasses.replace(req, offsets={tp: o for tp, o in req.offsets.items()
                                                    if tp not in denied})
        driver = self._driver(req.group_id)
        if driver is None:
            return commit_response(m.OffsetCommitResponse(
                {tp: E.NOT_COORDINATOR for tp in req.offsets} | denied))
        if not req.offsets:
            return commit_response(m.OffsetCommitResponse(denied))
        answer = await driver.ask(
            lambda handle, now: handler(driver.core)(handle, req, now),
            m.OffsetCommitResponse({tp: E.REQUEST_TIMED_OUT for tp in req.offsets}),
            WRITE_TIMEOUT_S)
        return commit_response(m.OffsetCommitResponse(dict(answer.partitions) | denied))

    @checked(checks.TxnOffsetCommit, _refuse_commit)
    async def TxnOffsetCommit(self, request: pb.TxnOffsetCommitRequest) -> pb.OffsetCommitResponse:
        """Kafka: Write on the transactional id, Read on the group and on each topic."""
        denial = self.authz.denial(Op.WRITE, R.TRANSACTIONAL_ID, request.transactional_id)
        if denial is not None:
            return _refuse_commit(request, Refused(*denial))
        refused = self._refused(pb.OffsetCommitResponse, request.group_id)
        if refused is not None:
            return refused
        return await self._commit(txn_commit_request(request),
                                  lambda core: core.handle_txn_offset_commit)

    @checked(checks.OffsetFetch, pb.OffsetFetchResponse)
    async def OffsetFetch(self, request: pb.OffsetFetchRequest) -> pb.OffsetFetchResponse:
        refused = self._refused(pb.OffsetFetchResponse, request.group_id)
        if refused is not None:
            return refused
        driver = self._driver(request.group_id)
        if driver is None:
            return pb.OffsetFetchResponse(error_code=E.NOT_COORDINATOR,
                                          error_message=_not_coordinator(request.group_id))
        out = fetch_response(driver.core.handle_offset_fetch(fetch_request(request)))
        if self.authz.enabled:
            # Kafka: offsets of topics the caller may not Describe are left out.
            kept = [p for p in out.partitions if self.authz.allowed(Op.DESCRIBE, R.TOPIC, p.topic)]
            del out.partitions[:]
            out.partitions.extend(kept)
        return out

    @checked(checks.ListGroups, pb.ListGroupsResponse)
    async def ListGroups(self, request: pb.ListGroupsRequest) -> pb.ListGroupsResponse:
        """The groups this broker coordinates; the admin client asks every broker."""
        states = tuple(request.states) or None
        out = pb.ListGroupsResponse()
        every = self.authz.allowed(Op.DESCRIBE, R.CLUSTER)     # else only Describe-able groups
        for driver in self.coordinators.drivers():
            listed = driver.core.list_groups(states)
            if listed.error:        # still loading: say so rather than list too few
                return pb.ListGroupsResponse(error_code=listed.error,
                                             error_message=message(listed.error))
            for g in listed.groups:
                if not every and not self.authz.allowed(Op.DESCRIBE, R.GROUP, g.group_id):
                    continue
                out.groups.add(group_id=g.group_id, protocol_type=g.protocol_type, state=g.state,
                               coordinator=self.node_id)
        out.groups.sort(key=lambda g: g.group_id)
        return out

    async def DescribeGroups(self, request: pb.DescribeGroupsRequest) -> pb.DescribeGroupsResponse:
        out = pb.DescribeGroupsResponse()
        for group_id in request.group_ids:
            denial = self._group_denial(group_id, Op.DESCRIBE)
            if denial is not None:
                out.groups.add(group_id=group_id, error_code=denial[0], error_message=denial[1],
                               state="Dead")
                continue
            driver = self._driver(group_id)
            if driver is None:
                out.groups.add(group_id=group_id, error_code=E.NOT_COORDINATOR,
                               error_message=_not_coordinator(group_id), state="Dead")
                continue
            ends = self._log_ends(driver, group_id) if request.include_offsets else {}
            described = driver.core.describe_group(group_id, ends)
            if not request.include_offsets:
                described = dataclasses.replace(described, offsets=())
            out.groups.append(described_group(described, self.node_id, ends))
        return out

    def _group_denial(self, group_id: str, operation) -> tuple[int, str] | None:
        """Why one group of a DescribeGroups or DeleteGroups is refused: a bad group id (checked
        first: a megabyte id is not worth an ACL lookup), then the ACLs."""
        refused = checks.group_id_problem(group_id)
        if refused is not None:
            return refused.code, refused.message
        return self.authz.denial(operation, R.GROUP, group_id)

    def _log_ends(self, driver: CoordinatorDriver, group_id: str) -> dict[TopicPartition, int]:
        """The lag's other half where this broker knows it: the high watermark (what a consumer
        can reach) of the group's partitions it leads."""
        committed = driver.core.handle_offset_fetch(m.OffsetFetchRequest(group_id)).partitions
        ends = {}
        for tp in committed:
            hosted = self.replicas.get(tp.topic, tp.partition)
            if hosted is not None and hosted.is_leader:
                ends[tp] = hosted.log.high_watermark
        return ends

    async def DeleteGroups(self, request: pb.DeleteGroupsRequest) -> pb.DeleteGroupsResponse:
        out = pb.DeleteGroupsResponse()
        for group_id in request.group_ids:
            denial = self._group_denial(group_id, Op.DELETE)
            if denial is not None:
                out.groups.add(group_id=group_id, error_code=denial[0], error_message=denial[1])
                continue
            driver = self._driver(group_id)
            if driver is None:
                code, detail = E.NOT_COORDINATOR, f"group '{group_id}'"
            else:
                code = await driver.ask(
                    lambda handle, now: driver.core.handle_delete_group(handle, group_id, now),
                    E.NOT_COORDINATOR, WRITE_TIMEOUT_S)
                detail = ""
            out.groups.add(group_id=group_id, error_code=code, error_message=message(code, detail))
        return out
