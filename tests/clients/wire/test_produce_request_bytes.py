"""The producer's hand-built ProduceRequest (clients/producer/produce_request.py) is byte for byte
what protobuf serializes for the same message, so a broker reads it as it always did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from clients.producer.produce_request import serialize_produce_request
from clients.wire import broker_pb2 as pb

int32 = st.integers(-(1 << 31), (1 << 31) - 1)
batches = st.lists(st.binary(max_size=300), max_size=3)
topics = st.dictionaries(
    st.text(max_size=6), st.lists(st.tuples(int32, batches), max_size=3), max_size=3
)


@settings(max_examples=300, deadline=None)
@given(int32, int32, topics, st.text(max_size=8))
def test_the_bytes_are_protobufs(acks, timeout_ms, by_topic, transactional_id):
    message = pb.ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topics=[
            pb.TopicProduceData(
                name=name,
                partitions=[
                    pb.PartitionProduceData(partition=p, records=b"".join(chunks))
                    for p, chunks in parts
                ],
            )
            for name, parts in by_topic.items()
        ],
        transactional_id=transactional_id,
    )
    assert (
        serialize_produce_request(acks, timeout_ms, by_topic, transactional_id)
        == message.SerializeToString()
    )


def test_a_megabyte_batch_has_a_three_byte_length():
    batch = b"b" * 1_000_000
    data = serialize_produce_request(-1, 30000, {"t": [(0, [batch])]})
    assert (
        data
        == pb.ProduceRequest(
            acks=-1,
            timeout_ms=30000,
            topics=[
                pb.TopicProduceData(
                    name="t", partitions=[pb.PartitionProduceData(partition=0, records=batch)]
                )
            ],
        ).SerializeToString()
    )
