"""The Quorum gRPC service: KRaft's Raft RPCs between controllers. Each call is
decoded, handed to the node's RaftDriver, and the core's answer encoded back; DescribeQuorum
answers from the core's own view."""
from __future__ import annotations

import logging

from clients.grpc_server import TrioGrpcServer
from clients.quorum_info import quorum_info_to_proto
from clients.wire import quorum_pb2 as pb
from clients.errors import ErrorCode
from kraft.raft import codec
from kraft.raft.messages import error_response
from kraft.raft.driver import RaftDriver

log = logging.getLogger(__name__)



class QuorumServicer:
    def __init__(self, driver: RaftDriver, cluster_id: str = "") -> None:
        self.driver = driver
        self.cluster_id = cluster_id

    async def _relay(self, request):
        message = codec.from_proto(request)
        if request.cluster_id and self.cluster_id and request.cluster_id != self.cluster_id:
            # A node formatted for another cluster must never vote here or fetch our log. The
            # answer carries the sender's own epoch, so it cannot move the sender's either.
            log.warning("refused %s from node %d of cluster %s (this is cluster %s); format "
                        "it with this cluster's id", type(message).__name__, message.src,
                        request.cluster_id, self.cluster_id)
            return codec.to_proto(error_response(message, message.dst, message.epoch, None,
                                                 ErrorCode.INCONSISTENT_CLUSTER_ID))
        return codec.to_proto(await self.driver.handle_request(message))

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

    def register(self, server: TrioGrpcServer) -> None:
        server.add_servicer(self, pb, "Quorum")
