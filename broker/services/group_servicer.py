"""The Group gRPC service: protobuf in and out at this edge (broker/services/group_wire.py), translated to
and from the wire-neutral group handler (broker/handlers/group.py), which decides: ACLs, request
checks, the coordinator core of the group's `__consumer_offsets` partition (NOT_COORDINATOR when
it is not this broker's), and how long a request is parked."""

from __future__ import annotations

from broker.group.coordinator_registry import GroupCoordinators
from broker.handlers import group_messages as g
from broker.handlers.group import GroupHandler
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.services.group_wire import (
    commit_request,
    commit_response,
    described_group,
    fetch_request,
    fetch_response,
    heartbeat_request,
    heartbeat_response,
    join_request,
    join_response,
    leave_request,
    leave_response,
    sync_request,
    sync_response,
    txn_commit_request,
)
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.verification import TxnVerifier
from clients.grpc_server import request_context
from clients.wire import group_pb2 as pb


class GroupServicer:
    def __init__(
        self,
        coordinators: GroupCoordinators,
        replicas: ReplicaManager,
        node_id: int,
        authorizer: RequestAuthorizer = OPEN,
        transactions: TransactionCoordinators | None = None,
        verifier: TxnVerifier | None = None,
    ) -> None:
        """`transactions` answers FindCoordinator key_type 1 (none: COORDINATOR_NOT_AVAILABLE);
        `verifier` checks a TxnOffsetCommit with its transaction coordinator (none: not
        checked)."""
        self.handler = GroupHandler(
            coordinators,
            replicas,
            node_id,
            authorizer=authorizer,
            transactions=transactions,
            verifier=verifier,
        )

    async def FindCoordinator(
        self, request: pb.FindCoordinatorRequest
    ) -> pb.FindCoordinatorResponse:
        r = await self.handler.find_coordinator(
            g.FindCoordinatorRequest(request.key, request.key_type), request_context()
        )
        return pb.FindCoordinatorResponse(
            error_code=r.error_code,
            error_message=r.error_message,
            node_id=r.node_id,
            host=r.host,
            port=r.port,
        )

    async def JoinGroup(self, request: pb.JoinGroupRequest) -> pb.JoinGroupResponse:
        return join_response(
            await self.handler.join_group(join_request(request), request_context())
        )

    async def SyncGroup(self, request: pb.SyncGroupRequest) -> pb.SyncGroupResponse:
        return sync_response(
            await self.handler.sync_group(sync_request(request), request_context())
        )

    async def Heartbeat(self, request: pb.HeartbeatRequest) -> pb.HeartbeatResponse:
        return heartbeat_response(
            self.handler.heartbeat(heartbeat_request(request), request_context())
        )

    async def LeaveGroup(self, request: pb.LeaveGroupRequest) -> pb.LeaveGroupResponse:
        return leave_response(
            await self.handler.leave_group(leave_request(request), request_context())
        )

    async def OffsetCommit(self, request: pb.OffsetCommitRequest) -> pb.OffsetCommitResponse:
        return commit_response(
            await self.handler.offset_commit(commit_request(request), request_context())
        )

    async def TxnOffsetCommit(self, request: pb.TxnOffsetCommitRequest) -> pb.OffsetCommitResponse:
        return commit_response(
            await self.handler.txn_offset_commit(txn_commit_request(request), request_context())
        )

    async def OffsetFetch(self, request: pb.OffsetFetchRequest) -> pb.OffsetFetchResponse:
        return fetch_response(self.handler.offset_fetch(fetch_request(request), request_context()))

    async def ListGroups(self, request: pb.ListGroupsRequest) -> pb.ListGroupsResponse:
        r = self.handler.list_groups(g.ListGroupsRequest(tuple(request.states)), request_context())
        return pb.ListGroupsResponse(
            error_code=r.error_code,
            error_message=r.error_message,
            groups=[
                pb.ListedGroup(
                    group_id=x.group_id,
                    protocol_type=x.protocol_type,
                    state=x.state,
                    coordinator=x.coordinator,
                )
                for x in r.groups
            ],
        )

    async def DescribeGroups(self, request: pb.DescribeGroupsRequest) -> pb.DescribeGroupsResponse:
        r = self.handler.describe_groups(
            g.DescribeGroupsRequest(tuple(request.group_ids), request.include_offsets),
            request_context(),
        )
        return pb.DescribeGroupsResponse(groups=[described_group(x) for x in r.groups])

    async def DeleteGroups(self, request: pb.DeleteGroupsRequest) -> pb.DeleteGroupsResponse:
        r = await self.handler.delete_groups(
            g.DeleteGroupsRequest(tuple(request.group_ids)), request_context()
        )
        return pb.DeleteGroupsResponse(
            groups=[
                pb.DeletedGroup(
                    group_id=x.group_id, error_code=x.error_code, error_message=x.error_message
                )
                for x in r.groups
            ]
        )
