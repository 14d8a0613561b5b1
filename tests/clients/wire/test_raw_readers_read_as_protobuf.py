"""The messages kraft reads from their wire bytes (the Produce request on the leader,
produce_request.py; a large FetchResponse on a follower, fetch_response_wire.py) read as protobuf
parses them: the same fields for any message, damaged or extended bytes and random bytes
refused exactly when protobuf refuses them, and nothing raises but WireFormatError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.handlers.produce import ProduceRequest
from broker.replication.fetch_response_wire import read_fetch_response
from broker.services.produce_request import from_message, parse_produce_request
from clients.wire import broker_pb2 as pb
from clients.wire.raw_fields import WireFormatError

int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)

produce_requests = st.builds(
    pb.ProduceRequest,
    acks=int32,
    timeout_ms=int32,
    topics=st.lists(
        st.builds(
            pb.TopicProduceData,
            name=st.text(max_size=8),
            partitions=st.lists(
                st.builds(pb.PartitionProduceData, partition=int32, records=st.binary(max_size=64)),
                max_size=3,
            ),
        ),
        max_size=3,
    ),
    transactional_id=st.text(max_size=6),
)


@st.composite
def fetch_partitions(draw):
    answer = pb.FetchPartitionResponse(
        partition=draw(int32),
        error_code=draw(int32),
        error_message=draw(st.text(max_size=6)),
        high_watermark=draw(int64),
        last_stable_offset=draw(int64),
        log_start_offset=draw(int64),
        records=draw(st.binary(max_size=64)),
        aborted_transactions=draw(
            st.lists(
                st.builds(pb.AbortedTransaction, producer_id=int64, first_offset=int64), max_size=2
            )
        ),
    )
    if draw(st.booleans()):
        answer.diverging_epoch.CopyFrom(
            draw(st.builds(pb.EpochEndOffset, epoch=int32, end_offset=int64))
        )
    return answer


fetch_responses = st.builds(
    pb.FetchResponse,
    error_code=int32,
    error_message=st.text(max_size=6),
    topics=st.lists(
        st.builds(
            pb.FetchTopicResponse,
            topic=st.text(max_size=8),
            partitions=st.lists(fetch_partitions(), max_size=3),
        ),
        max_size=3,
    ),
)


def _produce_plain(data: ProduceRequest) -> tuple:
    return (
        data.acks,
        data.timeout_ms,
        [(t.name, [(p.partition, bytes(p.records)) for p in t.partitions]) for t in data.topics],
        data.transactional_id,
    )


def _fetch_partition_plain(fields: pb.FetchPartitionResponse, records) -> tuple:
    return fields.SerializeToString(deterministic=True), bytes(records)


def _without_records(p: pb.FetchPartitionResponse) -> pb.FetchPartitionResponse:
    copy = pb.FetchPartitionResponse()
    copy.CopyFrom(p)
    copy.ClearField("records")
    return copy


# name -> (messages, ours: bytes -> plain, protobuf's: bytes -> plain)
READERS = {
    "produce request": (
        produce_requests,
        lambda data: _produce_plain(parse_produce_request(data)),
        lambda data: _produce_plain(from_message(pb.ProduceRequest.FromString(data))),
    ),
    "fetch response": (
        fetch_responses,
        lambda data: (
            lambda v: (
                v.error_code,
                v.error_message,
                [
                    (t.topic, [_fetch_partition_plain(f, r) for f, r in t.partitions])
                    for t in v.topics
                ],
            )
        )(read_fetch_response(data)),
        lambda data: (
            lambda m: (
                m.error_code,
                m.error_message,
                [
                    (
                        t.topic,
                        [
                            _fetch_partition_plain(_without_records(p), p.records)
                            for p in t.partitions
                        ],
                    )
                    for t in m.topics
                ],
            )
        )(pb.FetchResponse.FromString(data)),
    ),
}


def _read(name: str, data: bytes, *, ours: bool):
    _, mine, protobufs = READERS[name]
    try:
        return (mine if ours else protobufs)(data)
    except WireFormatError:
        if ours:
            return None
        raise
    except Exception:  # noqa: BLE001 - protobuf's DecodeError, whatever its class
        if ours:
            raise
        return None


@pytest.mark.parametrize("name", READERS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_message_reads_as_protobuf_reads_it(name, data):
    encoded = data.draw(READERS[name][0]).SerializeToString()
    assert _read(name, encoded, ours=True) == _read(name, encoded, ours=False)


@pytest.mark.parametrize("name", READERS)
@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    flips=st.lists(st.tuples(st.integers(0, 600), st.integers(0, 255)), max_size=4),
    tail=st.binary(max_size=12),
)
def test_damaged_and_extended_bytes_read_as_protobuf_reads_them(name, data, flips, tail):
    encoded = bytearray(data.draw(READERS[name][0]).SerializeToString() + tail)
    for at, value in flips:
        if at < len(encoded):
            encoded[at] = value
    assert _read(name, bytes(encoded), ours=True) == _read(name, bytes(encoded), ours=False)


@pytest.mark.parametrize("name", READERS)
@settings(max_examples=300, deadline=None)
@given(random=st.binary(max_size=48))
def test_random_bytes_read_as_protobuf_reads_them(name, random):
    assert _read(name, random, ours=True) == _read(name, random, ours=False)
