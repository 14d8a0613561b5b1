"""The Controller gRPC service, in its two places: on a controller's listener it runs the command
on this node's active controller (NOT_CONTROLLER, naming the active one, when this node is not
it); on a broker's listener it forwards to the active controller and answers once this broker's
own metadata image has caught up with what the command wrote (read-your-writes per broker).
Protobuf in and out here; the decisions are the wire-neutral admin handler's
(broker/handlers/admin.py)."""
from __future__ import annotations

from broker.controller import wire as controller_wire
from broker.controller.active import ActiveController
from broker.controller.channel import ControllerChannel
from broker.handlers.admin import AdminHandler, Answer, forward_to_controller
from broker.metadata.publisher import BrokerMetadata
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.errors import ErrorCode
from clients.grpc_server import request_context

METHODS = ["CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs", "AlterConfigs",
           "RegisterBroker", "BrokerHeartbeat", "AlterPartition", "ElectLeaders",
           "AllocateProducerIds", "CreateAcls", "DeleteAcls", "DescribeAcls",
           "AlterUserScramCredentials", "DescribeUserScramCredentials"]


class ControllerServicer:
    """`trust_nodes`: on a controller, a call from a node (ClusterAction) is a broker forwarding
    a client's call it has already authorized, so only the node is checked."""

    def __init__(self, answer: Answer, authorizer: RequestAuthorizer = OPEN,
                 trust_nodes: bool = False) -> None:
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


def _rpc(method: str):
    async def serve(self, request_pb):
        return await self._serve(method, request_pb)
    serve.__name__ = method
    return serve


for _method in METHODS:
    setattr(ControllerServicer, _method, _rpc(_method))


def on_controller(active: ActiveController,
                  authorizer: RequestAuthorizer = OPEN) -> ControllerServicer:
    return ControllerServicer(active.handle, authorizer, trust_nodes=True)


def on_broker(channel: ControllerChannel, metadata: BrokerMetadata,
              authorizer: RequestAuthorizer = OPEN) -> ControllerServicer:
    return ControllerServicer(forward_to_controller(channel, metadata), authorizer)
