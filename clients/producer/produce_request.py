"""The serialized ProduceRequest, built by hand around the encoded batches: protobuf would copy
every batch into its message and again into the bytes it serializes; here each batch is copied
once, into the bytes grpcio sends. Fields go in number order, as SerializeToString writes them,
so the bytes are the ones protobuf would produce (tests/clients/wire checks this)."""

from __future__ import annotations

from clients.record.varint import encode_unsigned
from clients.wire import broker_pb2 as pb

_LEN = 2  # wire type of a length-delimited field
_TOPICS_TAG = bytes((3 << 3 | _LEN,))  # ProduceRequest.topics
_PARTITIONS_TAG = bytes((2 << 3 | _LEN,))  # TopicProduceData.partitions
_RECORDS_TAG = bytes((2 << 3 | _LEN,))  # PartitionProduceData.records


def serialize_produce_request(
    acks: int,
    timeout_ms: int,
    topics: dict[str, list[tuple[int, list[bytes]]]],
    transactional_id: str = "",
) -> bytes:
    """`topics`: topic -> [(partition, [encoded batches, in order])]."""
    pieces = [pb.ProduceRequest(acks=acks, timeout_ms=timeout_ms).SerializeToString()]
    for topic, partitions in topics.items():
        topic_pieces = [pb.TopicProduceData(name=topic).SerializeToString()]
        for partition, batches in partitions:
            head = pb.PartitionProduceData(partition=partition).SerializeToString()
            size = sum(map(len, batches))
            records = [_RECORDS_TAG, encode_unsigned(size), *batches] if size else []
            body = len(head) + (1 + len(records[1]) + size if size else 0)
            topic_pieces += [_PARTITIONS_TAG, encode_unsigned(body), head, *records]
        topic_size = sum(map(len, topic_pieces))
        pieces += [_TOPICS_TAG, encode_unsigned(topic_size), *topic_pieces]
    if transactional_id:
        pieces.append(pb.ProduceRequest(transactional_id=transactional_id).SerializeToString())
    return b"".join(pieces)
