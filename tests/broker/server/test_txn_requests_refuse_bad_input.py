"""WriteTxnMarkers and ListOffsets fields out of Kafka's ranges are refused per partition with a
message naming the field, before anything is written (the handler never runs)."""

from __future__ import annotations

import pytest

from broker.services.broker_servicer import BrokerServicer
from clients.errors import ErrorCode
from clients.wire import broker_pb2 as pb


def servicer() -> BrokerServicer:
    return BrokerServicer(None, None, None, cluster_id="c")  # any handler run would crash


@pytest.mark.parametrize(
    "field,value", [("producer_id", -1), ("producer_epoch", 40_000), ("coordinator_epoch", -2)]
)
async def test_markers_out_of_range_are_refused(field, value):
    marker = pb.TxnMarker(
        producer_id=1,
        producer_epoch=0,
        coordinator_epoch=0,
        topics=[pb.TopicPartitions(topic="t", partitions=[0, 1])],
    )
    setattr(marker, field, value)
    answer = await servicer().WriteTxnMarkers(pb.WriteTxnMarkersRequest(markers=[marker]))
    parts = answer.markers[0].partitions
    assert [(p.topic, p.partition, p.error_code) for p in parts] == [
        ("t", 0, ErrorCode.INVALID_REQUEST),
        ("t", 1, ErrorCode.INVALID_REQUEST),
    ]
    assert field in parts[0].error_message


async def test_an_unknown_isolation_level_is_refused():
    request = pb.ListOffsetsRequest(
        isolation_level=3,
        topics=[pb.ListOffsetsTopic(name="t", partitions=[pb.ListOffsetsPartition(partition=0)])],
    )
    [part] = (await servicer().ListOffsets(request)).topics[0].partitions
    assert part.error_code == ErrorCode.INVALID_REQUEST and "isolation_level" in part.error_message
