"""The hand-written hot answers read back by kio (Kafka's schemas) in every version served:
Fetch with records as bytes and as a file range (which stays a duplicated descriptor until
sent), Produce with its per-version fields."""

from __future__ import annotations

import os

import pytest
from kio.serial import entity_reader

from broker.handlers import fetch as f
from broker.kafka.answer import FileRange
from broker.kafka.codec import _entity
from broker.kafka.handlers import fetch as fetch_handler
from broker.kafka.handlers import produce as produce_handler
from broker.replication.results import AbortedTxn
from kraft.log.file_slice import FileSlice


def decode_response(api_key: int, version: int, data: bytes):
    message, size = entity_reader(_entity(api_key, version, "response"))(data, 0)
    assert size == len(data), "the answer has bytes kio does not read"
    return message


def flatten(answer) -> bytes:
    out = []
    for piece in answer.pieces:
        out.append(
            os.pread(piece.fd, piece.size, piece.position)
            if isinstance(piece, FileRange)
            else piece
        )
    return b"".join(out)


@pytest.mark.parametrize("version", range(4, 13))
def test_fetch_answers_read_back_in_every_version(tmp_path, version):
    path = tmp_path / "segment.log"
    path.write_bytes(b"junk" + b"R" * 300 + b"tail")
    fd = os.open(path, os.O_RDONLY)
    response = f.FetchResponse(
        [
            f.FetchTopicResponse(
                "orders",
                [
                    f.FetchPartitionResponse(
                        0,
                        high_watermark=10,
                        last_stable_offset=8,
                        log_start_offset=2,
                        records=FileSlice(fd, 4, 300, 0),
                    ),
                    f.FetchPartitionResponse(
                        1,
                        high_watermark=5,
                        last_stable_offset=5,
                        log_start_offset=0,
                        records=b"B" * 20,
                        aborted_transactions=(AbortedTxn(7, 3, 4, 5),),
                    ),
                    f.FetchPartitionResponse(2, error_code=6),
                ],
            )
        ]
    )
    answer = fetch_handler.encode(version, response)
    os.close(fd)  # the segment closes: the answer holds its own descriptor
    try:
        assert any(isinstance(p, FileRange) for p in answer.pieces)
        decoded = decode_response(1, version, flatten(answer))
    finally:
        answer.close()
    [topic] = decoded.responses
    p0, p1, p2 = topic.partitions
    assert topic.topic == "orders"
    assert (p0.partition_index, p0.high_watermark, p0.last_stable_offset) == (0, 10, 8)
    assert p0.records == b"R" * 300 and p1.records == b"B" * 20
    assert p0.aborted_transactions is None
    assert [(a.producer_id, a.first_offset) for a in p1.aborted_transactions] == [(7, 3)]
    assert (p2.error_code, p2.records) == (6, b"")  # empty, as Kafka sends them
    if version >= 5:
        assert p0.log_start_offset == 2
    if version >= 7:
        assert (decoded.error_code, decoded.session_id) == (0, 0)


@pytest.mark.parametrize("version", range(3, 10))
def test_produce_answers_read_back_in_every_version(version):
    data = produce_handler.encode(
        version, [("orders", [(0, 0, 41, -1, 3, ""), (1, 6, -1, -1, -1, "not the leader")])]
    )
    decoded = decode_response(0, version, data)
    [topic] = decoded.responses
    ok, refused = topic.partition_responses
    assert topic.name == "orders"
    assert (ok.index, ok.error_code, ok.base_offset) == (0, 0, 41)
    assert (refused.index, refused.error_code) == (1, 6)
    if version >= 5:
        assert ok.log_start_offset == 3
    if version >= 8:
        assert refused.error_message == "not the leader" and ok.error_message is None
