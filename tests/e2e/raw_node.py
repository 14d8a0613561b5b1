"""A node's Broker and Controller services over raw gRPC, for tests that send what a client
library would not (hand-made batches, a coordinator's calls)."""

from __future__ import annotations

from clients.bridge import open_channel
from clients.wire import broker_pb2_grpc, controller_pb2_grpc
from clients.wire import controller_pb2 as cpb


class RawNode:
    def __init__(self, address: str) -> None:
        channel = open_channel(address)
        self.broker = broker_pb2_grpc.BrokerStub(channel)
        self.controller = controller_pb2_grpc.ControllerStub(channel)

    def create(self, name: str) -> None:
        req = cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name=name, num_partitions=1, replication_factor=-1)]
        )
        assert self.controller.CreateTopics(req, timeout=10).topics[0].error_code == 0
