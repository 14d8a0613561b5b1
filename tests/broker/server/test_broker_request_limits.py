"""The Broker service refuses Fetch and InitProducerId fields outside their types or with no
meaning (negative sizes, waits, partitions; a producer epoch past Kafka's int16) with
INVALID_REQUEST and a message naming the field, before the replica manager reads anything."""

from __future__ import annotations

import pytest

from broker.replication.replica_manager import ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from clients.errors import ErrorCode as E
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration


def servicer_of(tmp_path) -> BrokerServicer:
    """A broker leading t-0 alone."""
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    replicas.apply_registration(
        "t",
        0,
        "topic-id",
        LogConfig(),
        PartitionRegistration(replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1),
    )
    return BrokerServicer(replicas, metadata=None, channel=None, cluster_id="c", clock_ms=lambda: 0)


def fetch(part: dict | None = None, **fields) -> pb.FetchRequest:
    partition = dict(
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=0,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    partition.update(part or {})
    request = dict(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    request.update(fields)
    return pb.FetchRequest(
        **request, topics=[pb.FetchTopic(topic="t", partitions=[pb.FetchPartition(**partition)])]
    )


@pytest.mark.parametrize(
    "request_pb, code, words",
    [
        (fetch(max_wait_ms=-1), E.INVALID_REQUEST, "max_wait_ms=-1 is negative"),
        (fetch(min_bytes=-1), E.INVALID_REQUEST, "min_bytes=-1 is negative"),
        (fetch(max_bytes=-(1 << 31)), E.INVALID_REQUEST, "max_bytes=-2147483648 is negative"),
        (fetch(replica_id=-7), E.INVALID_REQUEST, "replica_id=-7 is out of range"),
        (fetch(isolation_level=5), E.INVALID_REQUEST, "isolation_level=5 is out of range"),
        (fetch({"partition_max_bytes": -5}), E.INVALID_REQUEST, "t-0: partition_max_bytes=-5"),
        (fetch({"partition": -1}), E.UNKNOWN_TOPIC_OR_PARTITION, "t--1: partition=-1 is negative"),
        (fetch({"current_leader_epoch": -9}), E.INVALID_REQUEST, "current_leader_epoch=-9"),
    ],
)
async def test_fetch_refused(tmp_path, request_pb, code, words):
    servicer = servicer_of(tmp_path)
    answer = await servicer.Fetch(request_pb)
    assert (answer.error_code, list(answer.topics)) == (code, [])
    assert words in answer.error_message


async def test_a_sane_fetch_still_reads(tmp_path):
    servicer = servicer_of(tmp_path)
    answer = await servicer.Fetch(fetch())
    assert answer.error_code == 0 and answer.topics[0].partitions[0].error_code == 0


async def test_a_producer_epoch_past_int16_is_refused(tmp_path):
    servicer = servicer_of(tmp_path)
    answer = await servicer.InitProducerId(
        pb.InitProducerIdRequest(producer_id=7, producer_epoch=40_000)
    )
    assert (answer.error_code, answer.producer_id) == (E.INVALID_REQUEST, -1)
    assert "producer_epoch=40000 is out of range: use -1 to 32767" in answer.error_message
