"""The Quorum gRPC service (DESIGN.md 5): KRaft's Raft RPCs between controllers. Each call is
decoded, handed to the node's RaftDriver, and the core's answer encoded back; DescribeQuorum
answers from the core's own view."""
from __future__ import annotations

import grpc
import trio

from clients.bridge import serve_async_servicer
from clients.quorum_info import quorum_info_to_proto
from clients.wire import quorum_pb2 as pb
from clients.wire import quorum_pb2_grpc
from kraft.raft import codec
from kraft.raft.driver import RaftDriver

METHODS = ["Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "Fetch", "FetchSnapshot",
           "DescribeQuorum"]


class QuorumServicer:
    def __init__(self, driver: RaftDriver) -> None:
        self.driver = driver

    async def _relay(self, request):
        return codec.to_proto(await self.driver.handle_request(codec.from_proto(request)))

    async def Vote(self, request: pb.VoteRequest) -> pb.VoteResponse:
        return await self._relay(request)

    async def BeginQuorumEpoch(self, request: pb.BeginQuorumEpochRequest
                               ) -> pb.BeginQuorumEpochResponse:
        return await self._relay(request)

    async def EndQuorumEpoch(self, request: pb.EndQuorumEpochRequest) -> pb.EndQuorumEpochResponse:
        return await self._relay(request)

    async def Fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        return await self._relay(request)

    async def FetchSnapshot(self, request: pb.FetchSnapshotRequest) -> pb.FetchSnapshotResponse:
        return await self._relay(request)

    async def DescribeQuorum(self, request: pb.DescribeQuorumRequest) -> pb.DescribeQuorumResponse:
        return quorum_info_to_proto(self.driver.describe())

    def register(self, server: grpc.Server, token: trio.lowlevel.TrioToken) -> None:
        serve_async_servicer(self, quorum_pb2_grpc.add_QuorumServicer_to_server, server, token,
                             METHODS)
