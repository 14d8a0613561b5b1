"""The Kafka listener's one way into the broker: each Kafka request becomes the call the gRPC
servicer makes for the same request, so both wires share one behaviour (authorization, acks,
the internal-topic rule, auto-creation). Nothing here decides; it only translates names."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.server.produce_request import ProduceData
from clients.wire import broker_pb2 as pb


@dataclass
class Backend:
    broker: object                       # broker.server.servicer.BrokerServicer
    groups: object = None                # broker.group.servicer.GroupServicer
    node_id: int = -1

    async def metadata(self, request: pb.MetadataRequest) -> pb.MetadataResponse:
        return await self.broker.Metadata(request)

    async def produce(self, request: ProduceData, appended: Callable[[], None]
                      ) -> pb.ProduceResponse:
        """`appended()` is called once every partition's append is done, before any wait."""
        return await self.broker.produce(request, appended=appended)

    async def fetch(self, request: pb.FetchRequest, serialize):
        """The gRPC Fetch's long poll and reads, its answer made by `serialize(topics)` (see
        BrokerServicer.fetch_with)."""
        return await self.broker.fetch_with(request, serialize)

    async def list_offsets(self, request: pb.ListOffsetsRequest) -> pb.ListOffsetsResponse:
        return await self.broker.ListOffsets(request)

    async def init_producer_id(self, request: pb.InitProducerIdRequest
                               ) -> pb.InitProducerIdResponse:
        return await self.broker.InitProducerId(request)

    def topic_name(self, topic_id) -> str | None:
        """The name of the topic with this id (a uuid.UUID), if this broker's image has it."""
        if topic_id is None:
            return None
        topic = self.broker.metadata.image.topic_by_id(topic_id.hex)
        return None if topic is None else topic.name

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        """A broker's (host, port) on `listener`, Kafka's rule for every address it hands out:
        on the listener the request came in on."""
        broker = self.broker.metadata.image.broker(broker_id)
        return None if broker is None else broker.endpoint(listener)

    async def find_coordinator(self, request):
        return await self.groups.FindCoordinator(request)

    async def join_group(self, request, require_known_member_id: bool):
        return await self.groups.JoinGroup(request,
                                           require_known_member_id=require_known_member_id)

    async def sync_group(self, request):
        return await self.groups.SyncGroup(request)

    async def heartbeat(self, request):
        return await self.groups.Heartbeat(request)

    async def leave_group(self, request):
        return await self.groups.LeaveGroup(request)

    async def offset_commit(self, request):
        return await self.groups.OffsetCommit(request)

    async def offset_fetch(self, request):
        return await self.groups.OffsetFetch(request)
