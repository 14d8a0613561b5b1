"""The Controller gRPC service, in its two places: on a controller's listener it runs the command
on this node's active controller (NOT_CONTROLLER, naming the active one, when this node is not
it); on a broker's listener it forwards to the active controller and answers once this broker's
own metadata image has caught up with what the command wrote (read-your-writes per broker).
Protobuf in and out here; the decisions are the wire-neutral admin handler's
(broker/handlers/admin.py)."""

from __future__ import annotations

from broker.controller.active import ActiveController
from broker.edge import controller_wire
from broker.edge.controller_channel import ControllerChannel
from broker.handlers.admin import AdminHandler, Answer, forward_to_controller
from broker.metadata.publisher import BrokerMetadata
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.errors import ErrorCode
from clients.grpc_server import request_context


class ControllerServicer:
    """`trust_nodes`: on a controller, a call from a node (ClusterAction) is a broker forwarding
    a client's call it has already authorized, so only the node is checked."""

    def __init__(
        self, answer: Answer, authorizer: RequestAuthorizer = OPEN, trust_nodes: bool = False
    ) -> None:
        self.handler = AdminHandler(answer, authorizer=authorizer, trust_nodes=trust_nodes)

    async def _serve(self, method: str, request_pb):
        try:
            request = controller_wire.from_proto(request_pb)
        except ValueError as exc:
            return controller_wire.request_error(method, ErrorCode.INVALID_REQUEST, str(exc))
        answer = await self.handler.handle(request, request_context())
        out = controller_wire.to_proto(answer.response)
        out.metadata_offset = answer.metadata_offset
        return out

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


def on_controller(
    active: ActiveController, authorizer: RequestAuthorizer = OPEN
) -> ControllerServicer:
    return ControllerServicer(active.handle, authorizer, trust_nodes=True)


def on_broker(
    channel: ControllerChannel, metadata: BrokerMetadata, authorizer: RequestAuthorizer = OPEN
) -> ControllerServicer:
    return ControllerServicer(forward_to_controller(channel, metadata), authorizer)
