"""A fetched partition's batches stay bytes until poll takes their records: taken in any sizes
they are the records one decode of the whole answer gives, from the offset asked for on; a
batch that does not decode stops the partition there, after every record before it."""

from __future__ import annotations

import pytest
import trio

from clients.consumer.completed_fetch import CompletedFetch, batch_span
from clients.consumer.fetcher import (
    MAX_BUFFERED_CHUNKS,
    SMALL_ANSWER_BYTES,
    ConsumerRecord,
    Fetcher,
)
from clients.errors import ErrorCode, KraftError
from clients.record.codec import decode_records, encode_batch
from clients.types import TopicPartition
from clients.wire import broker_pb2 as pb

TP = TopicPartition("t", 0)


def batches(sizes: list[int], offset: int = 0) -> bytes:
    out = b""
    for n in sizes:
        out += encode_batch(
            [(None, b"%d" % (offset + i), (), 1000 + i) for i in range(n)], base_offset=offset
        )
        offset += n
    return out


def completed(data: bytes, fetch_offset: int = 0) -> CompletedFetch:
    next_offset, _epoch, end, _has = batch_span(data, fetch_offset)
    return CompletedFetch(
        TP, data, end, fetch_offset, next_offset, record_type=ConsumerRecord, verify_crc=True
    )


@pytest.mark.parametrize("n", [1, 7, 50, 1000])
def test_records_taken_in_pieces_are_one_decode_of_the_answer(n):
    data = batches([30, 1, 45, 12])
    chunk = completed(data)
    assert chunk.records == [] and not chunk.done  # nothing decoded before a take
    got = []
    while not chunk.done:
        part = chunk.take(n)
        assert 0 < len(part) <= n
        got += part
    assert got == [ConsumerRecord("t", 0, *r) for r in decode_records(data)]
    assert chunk.take(n) == [] and chunk.next_offset == 88


def test_records_before_the_offset_asked_for_are_left_out():
    data = batches([10, 10])
    chunk = completed(data, fetch_offset=4)
    assert [r.offset for r in chunk.take(100)] == list(range(4, 20))


def test_a_trailing_partial_batch_and_control_batches_give_no_records():
    data = batches([5])
    marker = encode_batch(
        [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", None, 2)],
        base_offset=5,
        is_control=True,
        is_transactional=True,
    )
    cut = data + marker + batches([5], offset=6)[:-3]
    assert batch_span(cut, 0) == (6, -1, len(data) + len(marker), True)
    assert batch_span(marker, 5)[3] is False
    assert [r.offset for r in completed(cut).take(100)] == [0, 1, 2, 3, 4]


def corrupt_second_batch(sizes=(3, 4, 2)) -> tuple[bytes, int]:
    data = bytearray(batches(list(sizes)))
    first = batch_span(batches([sizes[0]]), 0)[2]
    data[first + 70] ^= 0xFF  # a byte of the second batch's records: its CRC fails
    return bytes(data), first


def test_a_corrupt_batch_stops_the_partition_after_every_record_before_it():
    data, _first = corrupt_second_batch()
    chunk = completed(data)
    assert [r.offset for r in chunk.take(100)] == [0, 1, 2]
    for _ in range(2):  # and it says so on every take after
        with pytest.raises(ValueError, match="CRC"):
            chunk.take(100)
    assert not chunk.done


def _fetcher() -> Fetcher:
    f = Fetcher(
        None,
        fetch_min_bytes=1,
        fetch_max_wait_ms=100,
        fetch_max_bytes=1 << 20,
        max_partition_fetch_bytes=1 << 20,
        auto_offset_reset="earliest",
        check_crcs=True,
        request_timeout_ms=1000,
    )
    f.assigned = [TP]
    f.fetch_offsets[TP] = f.positions[TP] = 0
    f.wake = lambda: None  # no fetch loop runs here
    return f


def _answer(records: bytes) -> pb.FetchResponse:
    return pb.FetchResponse(
        topics=[
            pb.FetchTopicResponse(
                topic="t",
                partitions=[
                    pb.FetchPartitionResponse(
                        partition=0, high_watermark=9, last_stable_offset=9, records=records
                    )
                ],
            )
        ]
    )


def test_poll_returns_the_records_before_a_corrupt_batch_then_fails_and_fetches_it_again():
    data, _first = corrupt_second_batch()
    f = _fetcher()
    trio.run(f._handle_fetch, [(TP, 0, 0)], _answer(data))
    assert f.fetch_offsets[TP] == 9  # prefetched past the whole answer
    records, _wake = f.take_locked(2)
    assert [r.offset for r in records] == [0, 1]
    records, _wake = f.take_locked(100)
    assert [r.offset for r in records] == [2]  # these go now, the error next
    with pytest.raises(KraftError) as caught:
        f.take_locked(100)
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE and "CRC" in caught.value.message
    # The partition stays at the corrupt batch and fetches it again; the answer in hand, for
    # the old fetch offset, is dropped.
    assert f.positions[TP] == f.fetch_offsets[TP] == 3 and not f.buffer and f.gens[TP] == 1
    trio.run(f._handle_fetch, [(TP, 3, 1)], _answer(data[_first:]))
    with pytest.raises(KraftError):
        f.take_locked(100)
    # A seek past the bad batch (offsets 3-6) reads on from there.
    f.seek_locked(TP, 7)
    third = data[len(batches([3, 4])) :]
    trio.run(f._handle_fetch, [(TP, 7, f.gens[TP])], _answer(third))
    records, _wake = f.take_locked(100)
    assert [r.offset for r in records] == [7, 8] and f.positions[TP] == 9


def test_the_buffer_holds_the_answer_as_bytes():
    f = _fetcher()
    data = batches([20, 20])
    trio.run(f._handle_fetch, [(TP, 0, 0)], _answer(data))
    (chunk,) = f.buffer
    assert chunk.data == data and chunk.records == []
    records, wake = f.take_locked(25)
    assert [r.offset for r in records] == list(range(25)) and not wake
    records, wake = f.take_locked(25)
    assert [r.offset for r in records] == list(range(25, 40)) and not f.buffer
    assert f.positions[TP] == 40
    # Below its chunk limit the partition's next fetch is already out: no wake for it.
    assert not wake


def test_using_up_a_chunk_wakes_the_fetch_loop_only_at_the_chunk_limit():
    f = _fetcher()
    trio.run(f._handle_fetch, [(TP, 0, 0)], _answer(batches([10])))
    trio.run(f._handle_fetch, [(TP, 10, 0)], _answer(batches([10], offset=10)))
    assert f.chunks[TP] == MAX_BUFFERED_CHUNKS == 2  # the fetch loop stopped asking
    records, wake = f.take_locked(10)
    assert [r.offset for r in records] == list(range(10)) and wake
    records, wake = f.take_locked(10)
    assert [r.offset for r in records] == list(range(10, 20)) and not wake


def test_an_answer_whose_batch_header_does_not_parse_fails_poll_not_the_consumer():
    f = _fetcher()
    data = bytearray(batches([3]))
    data[16] = 7  # the magic byte: only v2 (magic 2) exists
    trio.run(f._handle_fetch, [(TP, 0, 0)], _answer(bytes(data)))
    with pytest.raises(KraftError) as caught:
        f.take_locked(100)
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE and "magic 7" in caught.value.message
    assert f.fetch_offsets[TP] == f.positions[TP] == 0 and not f.buffer  # fetched again


def test_only_a_small_clean_answer_is_buffered_in_grpcs_thread():
    # Fetcher._take_answer runs in grpcio's callback thread: it buffers a clean answer and wakes
    # the blocking poller itself; anything with an error, or large, is left (None) to trio.
    f = _fetcher()
    assert f._take_answer([(TP, 0, 0)], _answer(batches([3]))) is True
    assert [r.offset for r in f.take_locked(10)[0]] == [0, 1, 2]
    failed = pb.FetchResponse(
        topics=[
            pb.FetchTopicResponse(
                topic="t",
                partitions=[
                    pb.FetchPartitionResponse(
                        partition=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER
                    )
                ],
            )
        ]
    )
    assert f._take_answer([(TP, 3, 0)], failed) is None
    assert f._take_answer([(TP, 3, 0)], pb.FetchResponse(error_code=1)) is None
    assert f.fetch_offsets[TP] == 3 and not f.buffer and f.error is None
    # A large answer goes the trio way, which issues the next fetch before the poller decodes.
    big = encode_batch([(None, b"v" * 1024, (), 1000 + i) for i in range(100)], base_offset=3)
    assert len(big) > SMALL_ANSWER_BYTES
    assert f._take_answer([(TP, 3, 0)], _answer(big)) is None and not f.buffer
    f.seek_locked(TP, 0)  # the answer below is for generation 0
    assert f._take_answer([(TP, 3, 0)], _answer(batches([3], offset=3))) is False
    assert not f.buffer and f.fetch_offsets[TP] == 0
