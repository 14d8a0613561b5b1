"""The Kafka listener's one way into the broker: the wire-neutral handlers (broker/handlers/)
that the gRPC servicers call too, so both wires share one behaviour (authorization, acks, the
internal-topic rule, auto-creation, the group coordinator). Nothing here decides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.group import messages as m
from broker.handlers import fetch as f
from broker.handlers import group_messages as g
from broker.handlers import list_offsets as lo
from broker.handlers import metadata as md
from broker.handlers import produce as pr
from broker.handlers.init_producer_id import InitProducerIdRequest
from clients.grpc_server import RequestContext
from kraft.metadata.image import MetadataImage


@dataclass(frozen=True)
class Backend:
    broker: object  # broker.services.broker_servicer.BrokerHandlers
    groups: object  # broker.handlers.group.GroupHandler
    image: Callable[[], MetadataImage]  # this broker's metadata image, now
    admin_handler: object = None  # broker.handlers.admin.AdminHandler
    transactions: object = None  # broker.handlers.transaction.TransactionHandler

    async def metadata(
        self, request: md.MetadataRequest, who: RequestContext
    ) -> md.MetadataResponse:
        return await self.broker.metadata.handle(request, who)

    async def produce(
        self, request: pr.ProduceRequest, who: RequestContext, appended: Callable[[], None]
    ) -> pr.ProduceResponse:
        """`appended()` is called once every partition's append is done, before any wait."""
        return await self.broker.produce.handle(request, who, appended=appended)

    async def fetch(self, request: f.FetchRequest, render, who: RequestContext):
        """The long poll and reads; `render(response)` makes the answer, synchronously, while
        its FileSlices are valid."""
        return await self.broker.fetch.handle(request, render, who)

    def list_offsets(
        self, request: lo.ListOffsetsRequest, who: RequestContext
    ) -> lo.ListOffsetsResponse:
        return self.broker.list_offsets.handle(request, who)

    async def init_producer_id(self, request: InitProducerIdRequest, who: RequestContext):
        return await self.broker.init_producer_id.handle(request, who)

    def topic_name(self, topic_id) -> str | None:
        """The name of the topic with this id (a uuid.UUID), if this broker's image has it."""
        if topic_id is None:
            return None
        topic = self.image().topic_by_id(topic_id.hex)
        return None if topic is None else topic.name

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        """A broker's (host, port) on `listener`, Kafka's rule for every address it hands out:
        on the listener the request came in on."""
        broker = self.image().broker(broker_id)
        return None if broker is None else broker.endpoint(listener)

    async def find_coordinator(self, request: g.FindCoordinatorRequest, who: RequestContext):
        return await self.groups.find_coordinator(request, who)

    async def join_group(self, request: m.JoinGroupRequest, who: RequestContext):
        return await self.groups.join_group(request, who)

    async def sync_group(self, request: m.SyncGroupRequest, who: RequestContext):
        return await self.groups.sync_group(request, who)

    def heartbeat(self, request: m.HeartbeatRequest, who: RequestContext):
        return self.groups.heartbeat(request, who)

    async def leave_group(self, request: m.LeaveGroupRequest, who: RequestContext):
        return await self.groups.leave_group(request, who)

    async def offset_commit(self, request: m.OffsetCommitRequest, who: RequestContext):
        return await self.groups.offset_commit(request, who)

    def offset_fetch(self, request: m.OffsetFetchRequest, who: RequestContext):
        return self.groups.offset_fetch(request, who)

    async def admin(self, request, who: RequestContext):
        """A controller request (kraft/controller/messages.py), forwarded to the active
        controller; its response once this broker's image has the change."""
        return (await self.admin_handler.handle(request, who)).response

    async def add_partitions_to_txn(self, request, who: RequestContext):
        return await self.transactions.add_partitions_to_txn(request, who)

    async def add_offsets_to_txn(self, request, who: RequestContext):
        return await self.transactions.add_offsets_to_txn(request, who)

    async def end_txn(self, request, who: RequestContext):
        return await self.transactions.end_txn(request, who)

    async def txn_offset_commit(self, request, who: RequestContext):
        return await self.groups.txn_offset_commit(request, who)

    def list_groups(self, request, who: RequestContext):
        return self.groups.list_groups(request, who)

    def describe_groups(self, request, who: RequestContext):
        return self.groups.describe_groups(request, who)

    async def delete_groups(self, request, who: RequestContext):
        return await self.groups.delete_groups(request, who)
