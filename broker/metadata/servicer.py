"""The Quorum gRPC service: KRaft's Raft RPCs between controllers. Each call is
decoded, handed to the node's RaftDriver, and the core's answer encoded back; DescribeQuorum
answers from the core's own view."""

from __future__ import annotations

import logging
import time

from broker.security.node_trust import refuse_unless_node, refuse_unless_voter
from clients.errors import ErrorCode
from clients.grpc_server import TrioGrpcServer
from clients.quorum_info import quorum_info_to_proto
from clients.wire import quorum_pb2 as pb
from kraft.raft import codec
from kraft.raft.driver import RaftDriver
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    VoteRequest,
    error_response,
)
from kraft.raft.validation import check_request

log = logging.getLogger(__name__)


class QuorumServicer:
    def __init__(self, driver: RaftDriver, cluster_id: str | None = None) -> None:
        self.driver = driver
        # Requests must carry it (an empty one is refused); by default the one the driver sends.
        self.cluster_id = driver.cluster_id if cluster_id is None else cluster_id
        self._quiet_until, self._unlogged = 0.0, 0

    async def _relay(self, request):
        message = codec.from_proto(request)
        # Who sent it comes first: a node that is not who it claims learns nothing more.
        problem = self._refuse_sender(message)
        if problem is not None:
            return codec.to_proto(
                error_response(
                    message,
                    message.dst,
                    message.epoch,
                    None,
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    problem,
                )
            )
        refusal = check_request(
            message, request.cluster_id, self.cluster_id, self.driver.core.node_id
        )
        if refusal is not None:
            # Refused before the core sees it, so it changes nothing. The answer carries the
            # sender's own epoch: it cannot move the sender's either.
            self._log_refusal(
                f"refused {type(message).__name__} from node {message.src}: {refusal.message}"
            )
            return codec.to_proto(
                error_response(
                    message, message.dst, message.epoch, None, refusal.error, refusal.message
                )
            )
        return codec.to_proto(await self.driver.handle_request(message))

    def _refuse_sender(self, message) -> str | None:
        """On an authenticated listener each node speaks only as itself: votes and epochs from
        voters, fetches from any node."""
        what = f"send {type(message).__name__}"
        if isinstance(message, (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest)):
            return refuse_unless_voter(message.src, self.driver.core.voters, what)
        return refuse_unless_node(message.src, what)

    def _log_refusal(self, line: str) -> None:
        # At most one line a second: a stream of bad requests must not fill the disk with logs.
        now = time.monotonic()
        if now < self._quiet_until:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more refused since the last line)" if self._unlogged else ""
        log.warning("%s%s", line, more)
        self._quiet_until, self._unlogged = now + 1.0, 0

    async def Vote(self, request: pb.VoteRequest) -> pb.VoteResponse:
        return await self._relay(request)

    async def BeginQuorumEpoch(
        self, request: pb.BeginQuorumEpochRequest
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
