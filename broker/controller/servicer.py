"""The Controller gRPC service, in its two places: on a controller's listener it runs the command
on this node's active controller (NOT_CONTROLLER, naming the active one, when this node is not
it); on a broker's listener it forwards to the active controller and answers once this broker's
own metadata image has caught up with what the command wrote (read-your-writes per broker)."""
from __future__ import annotations

from typing import Awaitable, Callable

from broker.controller import request_checks, wire as controller_wire
from broker.controller.active import ActiveController, NotController
from broker.controller.authorize import Screened, screen
from broker.metadata.publisher import BrokerMetadata
from broker.controller.channel import ControllerChannel
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.security.node_trust import refuse_unless_node
from broker.server.request_limits import Refused
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import CreateTopicsRequest

# Requests a broker sends for itself: only that broker's principal may send them.
NODE_METHODS = frozenset({"RegisterBroker", "BrokerHeartbeat", "AlterPartition",
                          "AllocateProducerIds"})

# How long a forwarded admin call may take in all (Kafka's default.api.timeout.ms is 60 s;
# admin clients here wait 30 s).
FORWARD_TIMEOUT_S = 30.0

Answer = Callable[[object], Awaitable[tuple[object, int]]]


class ControllerServicer:
    """`trust_nodes`: on a controller, a call from a node (ClusterAction) is a broker forwarding
    a client's call it has already authorized, so only the node is checked."""

    def __init__(self, answer: Answer, authorizer: RequestAuthorizer = OPEN,
                 trust_nodes: bool = False) -> None:
        self._answer = answer
        self._authz = authorizer
        self._trust_nodes = trust_nodes

    async def _serve(self, method: str, request_pb):
        try:
            request = controller_wire.from_proto(request_pb)
        except ValueError as exc:
            return controller_wire.request_error(method, ErrorCode.INVALID_REQUEST, str(exc))
        if method in NODE_METHODS:
            problem = refuse_unless_node(request.broker_id, f"send {method}")
            if problem is not None:
                return controller_wire.request_error(
                    method, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, problem)
        try:
            if self._trust_nodes and self._authz.is_node():
                screened = Screened(request)
            else:
                screened = screen(self._authz, request, controller_wire.RESPONSE_OF[type(request)])
            if screened.request is None:        # every item refused: nothing to send
                response, offset = screened.merge(None), -1
            else:
                # Checked once authorized: a caller with no right to it learns nothing more.
                request_checks.check(screened.request)
                response, offset = await self._answer(screened.request)
                response = screened.merge(response)
        except Refused as refused:
            return controller_wire.request_error(method, refused.code, refused.message)
        except NotController as exc:
            return controller_wire.not_controller(
                method, -1 if exc.leader_id is None else exc.leader_id, str(exc))
        except KraftError as exc:
            return controller_wire.request_error(method, exc.code, exc.message)
        answer = controller_wire.to_proto(response)
        answer.metadata_offset = offset
        return answer

    # -- the rpcs of controller.proto's Controller service, each through _serve -----------------
    async def CreateTopics(self, request_pb):
        return await self._serve("CreateTopics", request_pb)

    async def DeleteTopics(self, request_pb):
        return await self._serve("DeleteTopics", request_pb)

    async def CreatePartitions(self, request_pb):
        return await self._serve("CreatePartitions", request_pb)

    async def DescribeConfigs(self, request_pb):
        return await self._serve("DescribeConfigs", request_pb)

    async def AlterConfigs(self, request_pb):
        return await self._serve("AlterConfigs", request_pb)

    async def RegisterBroker(self, request_pb):
        return await self._serve("RegisterBroker", request_pb)

    async def BrokerHeartbeat(self, request_pb):
        return await self._serve("BrokerHeartbeat", request_pb)

    async def AlterPartition(self, request_pb):
        return await self._serve("AlterPartition", request_pb)

    async def ElectLeaders(self, request_pb):
        return await self._serve("ElectLeaders", request_pb)

    async def AllocateProducerIds(self, request_pb):
        return await self._serve("AllocateProducerIds", request_pb)

    async def CreateAcls(self, request_pb):
        return await self._serve("CreateAcls", request_pb)

    async def DeleteAcls(self, request_pb):
        return await self._serve("DeleteAcls", request_pb)

    async def DescribeAcls(self, request_pb):
        return await self._serve("DescribeAcls", request_pb)

    async def AlterUserScramCredentials(self, request_pb):
        return await self._serve("AlterUserScramCredentials", request_pb)

    async def DescribeUserScramCredentials(self, request_pb):
        return await self._serve("DescribeUserScramCredentials", request_pb)


def on_controller(active: ActiveController,
                  authorizer: RequestAuthorizer = OPEN) -> ControllerServicer:
    return ControllerServicer(active.handle, authorizer, trust_nodes=True)


def on_broker(channel: ControllerChannel, metadata: BrokerMetadata,
              authorizer: RequestAuthorizer = OPEN) -> ControllerServicer:
    async def forward(request) -> tuple[object, int]:
        if isinstance(request, CreateTopicsRequest) and request.internal:
            # Only a broker's own creation path (which reaches the controller directly) may
            # create internal topics; a client's CreateTopics is a client's, whatever it says.
            raise KraftError(ErrorCode.INVALID_REQUEST,
                             "CreateTopics: `internal` is set only by brokers creating their own "
                             "internal topics; leave it unset")
        response, offset = await channel.send_with_offset(request, FORWARD_TIMEOUT_S)
        if offset >= 0 and not await metadata.wait_for_offset(offset, FORWARD_TIMEOUT_S):
            raise KraftError(ErrorCode.REQUEST_TIMED_OUT,
                             f"the change committed at metadata offset {offset}, but this broker "
                             f"has not replayed it yet; it will shortly")
        return response, offset
    return ControllerServicer(forward, authorizer)
