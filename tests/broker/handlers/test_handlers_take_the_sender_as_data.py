"""The wire-neutral handlers decide from the dataclasses they are given alone: the sender is the
`who` argument, not the gRPC request context (a Kafka-protocol listener has none), so alice's
Produce goes through and the same request from anonymous is refused, with no serving_as; a
Fetch hands its render the records as unread file ranges of the segment."""

from __future__ import annotations

from broker.handlers.fetch import FetchHandler, FetchPartition, FetchRequest, FetchTopic
from broker.handlers.list_offsets import (
    ListOffsetsHandler,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from broker.handlers.produce import PartitionData, ProduceHandler, ProduceRequest, TopicData
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import RequestAuthorizer
from clients.errors import ErrorCode as E
from clients.grpc_server import RequestContext
from clients.record.codec import encode_batch
from kraft.log.file_slice import FileSlice
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata import records as r
from kraft.metadata.acl_records import acl_to_record
from kraft.metadata.delta import replay_all
from kraft.metadata.image import EMPTY_IMAGE, PartitionRegistration
from kraft.security.acl import AclBinding, Permission
from kraft.security.acl import Operation as O
from kraft.security.acl import PatternType as P
from kraft.security.acl import ResourceType as R
from kraft.security.authorizer import AuthorizerConfig

ALICE = RequestContext("User:alice", "10.0.0.1", listener="KAFKA")
ANONYMOUS = RequestContext()
REG = PartitionRegistration(replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1)


def _setup(tmp_path):
    records = [
        r.RegisterBrokerRecord(1, "i", 1, "h", 9092, fenced=False),
        r.TopicRecord("orders", "o" * 32),
        r.PartitionRecord("o" * 32, 0, (1,), (1,), 1),
        acl_to_record(
            "acl0",
            AclBinding(R.TOPIC, "orders", P.LITERAL, "User:alice", "*", O.ALL, Permission.ALLOW),
        ),
    ]
    image = replay_all(EMPTY_IMAGE, records, last_offset=len(records) - 1, epoch=1)
    replicas = ReplicaManager(
        LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1, clock_ms=lambda: 0
    )
    replicas.apply_registration("orders", 0, "o" * 32, LogConfig(), REG, now_ms=0)
    return replicas, RequestAuthorizer(lambda: image, AuthorizerConfig())


def _produce(value: bytes) -> ProduceRequest:
    batch = encode_batch([(b"k", value, (), 1000)])
    return ProduceRequest(
        acks=1, timeout_ms=0, topics=[TopicData("orders", [PartitionData(0, memoryview(batch))])]
    )


async def test_the_sender_is_the_who_argument(tmp_path):
    replicas, authz = _setup(tmp_path)
    produce = ProduceHandler(replicas, authorizer=authz, clock_ms=lambda: 0)
    [[refused]] = [t.partitions for t in (await produce.handle(_produce(b"x"), ANONYMOUS)).topics]
    assert refused.error_code == E.TOPIC_AUTHORIZATION_FAILED and refused.base_offset == -1
    assert "User:ANONYMOUS" in refused.error_message
    [[written]] = [t.partitions for t in (await produce.handle(_produce(b"v"), ALICE)).topics]
    assert (written.error_code, written.base_offset) == (0, 0)

    offsets = ListOffsetsHandler(replicas, authorizer=authz)
    ask = ListOffsetsRequest([ListOffsetsTopic("orders", [ListOffsetsPartition(0, -1)])])
    assert (
        offsets.handle(ask, ANONYMOUS).topics[0].partitions[0].error_code
        == E.TOPIC_AUTHORIZATION_FAILED
    )
    assert offsets.handle(ask, ALICE).topics[0].partitions[0].offset == 1


async def test_fetch_renders_records_as_file_ranges(tmp_path):
    replicas, authz = _setup(tmp_path)
    await ProduceHandler(replicas, authorizer=authz, clock_ms=lambda: 0).handle(
        _produce(b"hello"), ALICE
    )
    fetch = FetchHandler(replicas, authorizer=authz, monotonic_ms=lambda: 0)
    request = FetchRequest([FetchTopic("orders", [FetchPartition(0, 0)])], min_bytes=1)
    seen = []

    def render(response):
        [part] = response.topics[0].partitions
        seen.append(part)
        return part.records.read() if isinstance(part.records, FileSlice) else None

    data = await fetch.handle(request, render, ALICE)
    [part] = seen
    assert isinstance(part.records, FileSlice) and part.records.size == len(data) > 0
    assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 1, 1)
    assert b"hello" in data
    denied = await fetch.handle(
        request, lambda response: response.topics[0].partitions[0], ANONYMOUS
    )
    assert denied.error_code == E.TOPIC_AUTHORIZATION_FAILED and denied.records == b""
