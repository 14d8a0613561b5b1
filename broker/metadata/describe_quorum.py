"""DescribeQuorum on a broker's listener, as Kafka's brokers forward it: the quorum leader's
view, asked of the controllers' Quorum service (leader first), so `kraft quorum describe
--bootstrap-server` works with nothing but a broker's address."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.metadata.quorum import MetadataQuorum
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from clients import bridge
from clients.errors import KraftError
from clients.quorum_info import ask_quorum, quorum_info_to_proto
from clients.wire import quorum_pb2 as pb
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

ASK_TIMEOUT_S = 3.0


class BrokerDescribeQuorum:
    """Serves only DescribeQuorum of the Quorum service (the Raft RPCs stay on the controller
    listener): register with `only=("DescribeQuorum",)`."""

    def __init__(
        self,
        quorum: MetadataQuorum,
        authorizer: RequestAuthorizer = OPEN,
        open_channel: Callable[[str], Any] = bridge.open_channel,
    ) -> None:
        self.quorum = quorum
        self.authz = authorizer
        self.open_channel = open_channel  # as the broker reaches the controllers (TLS, ...)

    async def DescribeQuorum(self, request: pb.DescribeQuorumRequest) -> pb.DescribeQuorumResponse:
        # Kafka: DescribeQuorum needs Describe on the cluster.
        denial = self.authz.denial(Op.DESCRIBE, R.CLUSTER)
        if denial is not None:
            return pb.DescribeQuorumResponse(error_code=denial[0], error_message=denial[1])
        own = self.quorum.driver.describe()
        if own.role == "Leader":  # a combined node leading the quorum answers itself
            return quorum_info_to_proto(own)
        voters, leader = self.quorum.voters, self.quorum.leader_id
        order = ([leader] if leader in voters else []) + sorted(i for i in voters if i != leader)
        try:
            return quorum_info_to_proto(
                await ask_quorum([voters[i] for i in order], ASK_TIMEOUT_S, self.open_channel)
            )
        except KraftError:
            # No controller answered: this broker's seat still knows the leader and epoch.
            return quorum_info_to_proto(own)
