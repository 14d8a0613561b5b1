"""The Controller requests (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
AlterConfigs, ElectLeaders, ACLs, SCRAM users, and the brokers' own calls), wire-neutral: who may
make each (per item for topics and configs, the whole request for cluster calls), the request
checks, then the answer: the active controller's, or on a broker the forward to it and the wait
until this broker's image has replayed what it wrote. Requests and answers are
kraft/controller/messages.py's dataclasses; a whole-request refusal is an answer whose
`error_code` is set (with NOT_CONTROLLER, `controller_id` says where to go)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.controller import request_checks
from broker.controller.authorize import Screened, screen
from broker.edge import controller_wire
from broker.edge.controller_channel import ControllerChannel, NotController
from broker.edge.request_limits import Refused
from broker.metadata.publisher import BrokerMetadata
from broker.security.node_trust import refuse_unless_node
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import ANONYMOUS, RequestContext
from kraft.controller import messages as m

# Requests a broker sends for itself: only that broker's principal may send them.
NODE_REQUESTS = (
    m.RegisterBrokerRequest,
    m.BrokerHeartbeatRequest,
    m.AlterPartitionRequest,
    m.AllocateProducerIdsRequest,
)

# How long a forwarded admin call may take in all (Kafka's default.api.timeout.ms is 60 s;
# admin clients here wait 30 s).
FORWARD_TIMEOUT_S = 30.0

# (the request) -> (the response, the metadata offset of what it wrote; -1: nothing)
Answer = Callable[[object], Awaitable[tuple[object, int]]]


@dataclass(frozen=True, slots=True)
class AdminAnswer:
    response: object  # the request's response dataclass (kraft.controller.messages)
    metadata_offset: int = -1  # the change's offset in the metadata log; -1: nothing written


def refusal(request, code: int, text: str, controller_id: int = -1) -> AdminAnswer:
    """`request` refused as a whole: its response with no results, the request-level error."""
    response_cls = controller_wire.RESPONSE_OF[type(request)]
    required = {
        f.name: ()
        for f in dataclasses.fields(response_cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return AdminAnswer(
        response_cls(**required, error_code=code, error_message=text, controller_id=controller_id)
    )


def _not_controller(request, controller_id: int, text: str) -> AdminAnswer:
    rpc = controller_wire.RPC_OF[type(request)]
    text = text or (
        f"this node is not the active controller; send {rpc} to node {controller_id}"
        if controller_id >= 0
        else f"this node is not the active controller and does not know which one is; "
        f"retry {rpc} after a short wait"
    )
    return refusal(request, ErrorCode.NOT_CONTROLLER, text, controller_id)


class AdminHandler:
    """`trust_nodes`: on a controller, a call from a node (ClusterAction) is a broker forwarding
    a client's call it has already authorized, so only the node is checked."""

    def __init__(
        self, answer: Answer, *, authorizer: RequestAuthorizer = OPEN, trust_nodes: bool = False
    ) -> None:
        self._answer = answer
        self._authz = authorizer
        self._trust_nodes = trust_nodes

    async def handle(self, request, who: RequestContext = ANONYMOUS) -> AdminAnswer:
        if isinstance(request, NODE_REQUESTS):
            rpc = controller_wire.RPC_OF[type(request)]
            problem = refuse_unless_node(request.broker_id, f"send {rpc}", who)
            if problem is not None:
                return refusal(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, problem)
        try:
            if self._trust_nodes and self._authz.is_node(who):
                screened = Screened(request)
            else:
                screened = screen(
                    self._authz, request, controller_wire.RESPONSE_OF[type(request)], who
                )
            if screened.request is None:  # every item refused: nothing to send
                return AdminAnswer(screened.merge(None))
            # Checked once authorized: a caller with no right to it learns nothing more.
            request_checks.check(screened.request)
            response, offset = await self._answer(screened.request)
            return AdminAnswer(screened.merge(response), offset)
        except Refused as refused:
            return refusal(request, refused.code, refused.message)
        except NotController as exc:
            return _not_controller(
                request, -1 if exc.leader_id is None else exc.leader_id, str(exc)
            )
        except KraftError as exc:
            return refusal(request, exc.code, exc.message)


def forward_to_controller(channel: ControllerChannel, metadata: BrokerMetadata) -> Answer:
    """A broker's answer: the active controller's, once this broker's own image has replayed
    the change (read-your-writes per broker)."""

    async def forward(request) -> tuple[object, int]:
        if isinstance(request, m.CreateTopicsRequest) and request.internal:
            # Only a broker's own creation path (which reaches the controller directly) may
            # create internal topics; a client's CreateTopics is a client's, whatever it says.
            raise KraftError(
                ErrorCode.INVALID_REQUEST,
                "CreateTopics: `internal` is set only by brokers creating their own "
                "internal topics; leave it unset",
            )
        response, offset = await channel.send_with_offset(request, FORWARD_TIMEOUT_S)
        if offset >= 0 and not await metadata.wait_for_offset(offset, FORWARD_TIMEOUT_S):
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"the change committed at metadata offset {offset}, but this broker "
                f"has not replayed it yet; it will shortly",
            )
        return response, offset

    return forward
