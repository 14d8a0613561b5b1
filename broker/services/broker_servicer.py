"""The Broker gRPC service (Metadata, Produce, Fetch, ListOffsets, InitProducerId; WriteTxnMarkers
is txn_markers.py's): protobuf in and out at this edge, translated to and from the wire-neutral
handlers of broker/handlers/, which make every decision (a Kafka-protocol listener calls them too)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.edge.controller_channel import ControllerChannel
from broker.edge.request_limits import Refused, checked
from broker.handlers import fetch as f
from broker.handlers import init_producer_id as ipi
from broker.handlers import list_offsets as lo
from broker.handlers import metadata as md
from broker.handlers import produce as pr
from broker.handlers import request_checks as checks
from broker.handlers.write_txn_markers import TxnMarkerWriter
from broker.idempotence.producer_ids import ProducerIdBlocks
from broker.metadata.publisher import BrokerMetadata
from broker.replication.describe_partitions import describe_partitions
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import OPEN, RequestAuthorizer
from broker.services.fetch_response import serialize_fetch_response
from broker.services.produce_request import from_message, parse_produce_request
from broker.services.transaction_servicer import TransactionServicer
from broker.transaction.verification import TxnVerifier
from clients.errors import ErrorCode
from clients.grpc_server import parses_request, request_context
from clients.wire import broker_pb2 as pb
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def refuse_write_txn_markers(
    request: pb.WriteTxnMarkersRequest, refused: Refused
) -> pb.WriteTxnMarkersResponse:
    """The refusal for every partition named: the response has no request-wide error."""
    response = pb.WriteTxnMarkersResponse()
    for m in request.markers:
        answers = response.markers.add(producer_id=m.producer_id).partitions
        for tp in m.topics:
            for partition in tp.partitions:
                answers.add(
                    topic=tp.topic,
                    partition=partition,
                    error_code=refused.code,
                    error_message=refused.message,
                )
    return response


@dataclass(frozen=True)
class BrokerHandlers:
    """The wire-neutral handlers of the Broker service's requests, one per request."""

    produce: pr.ProduceHandler
    fetch: f.FetchHandler
    list_offsets: lo.ListOffsetsHandler
    metadata: md.MetadataHandler
    init_producer_id: ipi.InitProducerIdHandler


class BrokerServicer:
    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: BrokerMetadata,
        channel: ControllerChannel,
        *,
        cluster_id: str,
        producer_ids: ProducerIdBlocks | None = None,
        auto_create: bool = True,
        controller_id: Callable[[], int | None] = lambda: None,
        clock_ms: Callable[[], int] = wall_clock_ms,
        monotonic_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
        authorizer: RequestAuthorizer = OPEN,
        transactions: TransactionServicer | None = None,
        txn_markers: TxnMarkerWriter | None = None,
        verifier: TxnVerifier | None = None,
    ) -> None:
        """`transactions` answers InitProducerId with a transactional id (none: refused).
        `verifier` checks a transaction's first batch on a partition with its coordinator
        (broker/transaction/verification.py; none: not checked)."""
        self.replicas = replicas
        self.txn_markers = txn_markers
        self.authz = authorizer
        self.handlers = BrokerHandlers(
            produce=pr.ProduceHandler(
                replicas, authorizer=authorizer, verifier=verifier, clock_ms=clock_ms
            ),
            fetch=f.FetchHandler(replicas, authorizer=authorizer, monotonic_ms=monotonic_ms),
            list_offsets=lo.ListOffsetsHandler(replicas, authorizer=authorizer),
            metadata=md.MetadataHandler(
                metadata,
                channel,
                cluster_id=cluster_id,
                authorizer=authorizer,
                auto_create=auto_create,
                controller_id=controller_id,
            ),
            init_producer_id=ipi.InitProducerIdHandler(
                producer_ids,
                authorizer=authorizer,
                transactions=None if transactions is None else transactions.handler,
            ),
        )

    # -- Metadata ----------------------------------------------------------------------------
    async def Metadata(self, request: pb.MetadataRequest) -> pb.MetadataResponse:
        answer = await self.handlers.metadata.handle(
            md.MetadataRequest(
                tuple(request.topics), request.all_topics, request.allow_auto_topic_creation
            ),
            request_context(),
        )
        return pb.MetadataResponse(
            brokers=[
                pb.BrokerNode(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                for b in answer.brokers
            ],
            controller_id=answer.controller_id,
            cluster_id=answer.cluster_id,
            topics=[
                pb.TopicMetadata(
                    name=t.name,
                    error_code=t.error_code,
                    error_message=t.error_message,
                    topic_id=t.topic_id,
                    is_internal=t.is_internal,
                    partitions=[
                        pb.PartitionMetadata(
                            partition=p.partition,
                            leader=p.leader,
                            leader_epoch=p.leader_epoch,
                            replicas=p.replicas,
                            isr=p.isr,
                            offline_replicas=p.offline_replicas,
                            error_code=p.error_code,
                            error_message=p.error_message,
                        )
                        for p in t.partitions
                    ],
                )
                for t in answer.topics
            ],
        )

    # -- Produce -----------------------------------------------------------------------------
    async def Produce(self, request: pb.ProduceRequest) -> pb.ProduceResponse:
        """The message, for in-process callers; the gRPC server serves `produce_serialized`."""
        return await self._produce(from_message(request))

    @parses_request(parse_produce_request)
    async def produce_serialized(self, request: pr.ProduceRequest) -> bytes:
        """Produce from the request's wire bytes: each partition's records reach the log as a
        view of the request (produce_request.py), not as protobuf's two copies."""
        return (await self._produce(request)).SerializeToString()

    async def _produce(self, request: pr.ProduceRequest) -> pb.ProduceResponse:
        answer = await self.handlers.produce.handle(request, request_context())
        response = pb.ProduceResponse()
        for topic in answer.topics:
            answers = response.topics.add(name=topic.name).partitions
            for p in topic.partitions:
                answers.add(
                    partition=p.partition,
                    error_code=p.error_code,
                    error_message=p.error_message,
                    base_offset=p.base_offset,
                    log_append_time_ms=p.log_append_time_ms,
                    log_start_offset=p.log_start_offset,
                )
        return response

    # -- Fetch -------------------------------------------------------------------------------
    async def Fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        """The message, for in-process callers; the gRPC server serves `fetch_serialized`."""
        return pb.FetchResponse.FromString(await self.fetch_serialized(request))

    async def fetch_serialized(self, request: pb.FetchRequest) -> bytes:
        """The serialized FetchResponse, its records read from the segment files straight into
        it (fetch_response.py): a fetched byte is copied once in user space, not four times."""
        return await self.handlers.fetch.handle(
            fetch_request(request), render_fetch, request_context()
        )

    # -- ListOffsets -------------------------------------------------------------------------
    async def ListOffsets(self, request: pb.ListOffsetsRequest) -> pb.ListOffsetsResponse:
        answer = self.handlers.list_offsets.handle(
            lo.ListOffsetsRequest(
                [
                    lo.ListOffsetsTopic(
                        t.name,
                        [
                            lo.ListOffsetsPartition(
                                p.partition, p.timestamp, p.current_leader_epoch
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
                request.isolation_level,
            ),
            request_context(),
        )
        return pb.ListOffsetsResponse(
            topics=[
                pb.ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[
                        pb.ListOffsetsPartitionResponse(
                            partition=p.partition,
                            error_code=p.error_code,
                            error_message=p.error_message,
                            timestamp=p.timestamp,
                            offset=p.offset,
                            leader_epoch=p.leader_epoch,
                        )
                        for p in t.partitions
                    ],
                )
                for t in answer.topics
            ]
        )

    # -- InitProducerId (idempotent and transactional producers) -----------------------------
    async def InitProducerId(self, request: pb.InitProducerIdRequest) -> pb.InitProducerIdResponse:
        answer = await self.handlers.init_producer_id.handle(
            ipi.InitProducerIdRequest(
                request.transactional_id,
                request.transaction_timeout_ms,
                request.producer_id if request.HasField("producer_id") else None,
                request.producer_epoch if request.HasField("producer_epoch") else None,
            ),
            request_context(),
        )
        return pb.InitProducerIdResponse(
            error_code=answer.error_code,
            error_message=answer.error_message,
            producer_id=answer.producer_id,
            producer_epoch=answer.producer_epoch,
        )

    # -- WriteTxnMarkers (from a transaction coordinator) ----------------------------------------
    @checked(checks.WriteTxnMarkers, refuse_write_txn_markers)
    async def WriteTxnMarkers(
        self, request: pb.WriteTxnMarkersRequest
    ) -> pb.WriteTxnMarkersResponse:
        if self.txn_markers is not None:
            return await self.txn_markers.write_txn_markers(request)
        response = pb.WriteTxnMarkersResponse()
        for marker in request.markers:
            answers = response.markers.add(producer_id=marker.producer_id).partitions
            for tp in marker.topics:
                for partition in tp.partitions:
                    answers.add(
                        topic=tp.topic,
                        partition=partition,
                        error_code=ErrorCode.UNSUPPORTED_VERSION,
                        error_message="this broker writes no transaction markers",
                    )
        return response

    # -- DescribePartitions (kraft topic describe: high watermarks and replica log ends) ---------
    async def DescribePartitions(
        self, request: pb.DescribePartitionsRequest
    ) -> pb.DescribePartitionsResponse:
        out = describe_partitions(self.replicas, request)
        if self.authz.enabled:  # only the partitions of topics the caller may Describe
            kept = [p for p in out.partitions if self.authz.allowed(Op.DESCRIBE, R.TOPIC, p.topic)]
            del out.partitions[:]
            out.partitions.extend(kept)
        return out


def fetch_request(request: pb.FetchRequest) -> f.FetchRequest:
    return f.FetchRequest(
        [
            f.FetchTopic(
                t.topic,
                [
                    f.FetchPartition(
                        p.partition,
                        p.fetch_offset,
                        p.partition_max_bytes,
                        p.current_leader_epoch,
                        p.last_fetched_epoch,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
        request.replica_id,
        request.replica_epoch,
        request.max_wait_ms,
        request.min_bytes,
        request.max_bytes,
        request.isolation_level,
    )


def render_fetch(response: f.FetchResponse) -> bytes:
    """The serialized FetchResponse; each partition's head serialized without its records,
    which serialize_fetch_response reads in place (FileSlices straight from the segment)."""
    if response.error_code:
        return pb.FetchResponse(
            error_code=response.error_code, error_message=response.error_message
        ).SerializeToString()
    topics = []
    for t in response.topics:
        answers = []
        for p in t.partitions:
            head = pb.FetchPartitionResponse(
                partition=p.partition,
                error_code=p.error_code,
                error_message=p.error_message,
                high_watermark=p.high_watermark,
                last_stable_offset=p.last_stable_offset,
                log_start_offset=p.log_start_offset,
                aborted_transactions=[
                    pb.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                    for a in p.aborted_transactions
                ],
            )
            if p.diverging_epoch is not None:
                head.diverging_epoch.epoch, head.diverging_epoch.end_offset = p.diverging_epoch
            answers.append((head.SerializeToString(), p.records))
        topics.append((pb.FetchTopicResponse(topic=t.topic).SerializeToString(), answers))
    return serialize_fetch_response(topics)
