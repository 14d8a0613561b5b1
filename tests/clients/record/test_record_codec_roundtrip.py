"""encode_batch then decode_batch / decode_records gives back every key, value, header and
timestamp, for every compression type, and the header fields the producer sets."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clients.consumer.fetcher import ConsumerRecord
from clients.record.batch_header import validate_batch
from clients.record.codec import (
    Record,
    count_records,
    decode_batch,
    decode_records,
    encode_batch,
    iter_batches,
)

CODECS = [0, 1, 3, 4]
BASE_TS = 1_700_000_000_000

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=200, max_size=20_000))
headers = st.one_of(
    st.none(),
    st.just(()),
    st.lists(
        st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=30))), max_size=4
    ),
)
# Deltas around 0 and beyond one and two varint bytes, both signs (timestamps may go back).
ts_delta = st.one_of(st.integers(-70, 70), st.integers(-(2**40), 2**40))
record = st.tuples(maybe_bytes, maybe_bytes, headers, ts_delta)


def expected(records, base_offset=0):
    return [
        Record(base_offset + i, BASE_TS + d if i else BASE_TS, k, v, tuple(h or ()))
        for i, (k, v, h, d) in enumerate(records)
    ]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record, min_size=1, max_size=30), base_offset=st.integers(0, 2**40))
def test_round_trip(codec, records, base_offset):
    # The first record's delta is ignored: it defines the batch's base timestamp.
    inputs = [(k, v, h, BASE_TS + (d if i else 0)) for i, (k, v, h, d) in enumerate(records)]
    batch = encode_batch(inputs, compression=codec, base_offset=base_offset)
    header, decoded = decode_batch(batch)
    assert decoded == expected(records, base_offset)
    assert header == validate_batch(batch)
    assert header.compression == codec
    assert header.records_count == len(records) == header.last_offset_delta + 1
    assert header.base_timestamp == BASE_TS
    assert header.max_timestamp == max(t for _, _, _, t in inputs)
    assert decode_records(batch + batch) == decoded + decoded
    # The consumer's own record type, made at once: the same fields after topic and partition.
    as_consumer = decode_records(batch, into=(ConsumerRecord, "t", 3))
    assert as_consumer == [ConsumerRecord("t", 3, *r) for r in decoded]
    assert all(type(r) is ConsumerRecord for r in as_consumer)


def test_large_and_many_records():
    records = [
        (b"k%d" % i, bytes([i % 251]) * (i * 37 % 70_000), None, BASE_TS + i) for i in range(300)
    ]
    for codec in CODECS:
        decoded = decode_records(encode_batch(records, compression=codec))
        assert [(r.key, r.value, r.timestamp) for r in decoded] == [
            (k, v, t) for k, v, _, t in records
        ]
        assert [r.offset for r in decoded] == list(range(300))


def test_accepts_bytearray_and_memoryview_input():
    batch = encode_batch([(bytearray(b"k"), memoryview(b"v"), [("h", bytearray(b"x"))], 5)])
    for buf in (batch, bytearray(batch), memoryview(batch)):
        assert decode_records(buf) == [Record(0, 5, b"k", b"v", (("h", b"x"),))]
        assert decode_batch(buf)[1] == decode_records(buf)


def test_producer_fields_and_flags():
    batch = encode_batch(
        [(None, b"v", None, 10)],
        base_offset=42,
        partition_leader_epoch=7,
        producer_id=1234,
        producer_epoch=3,
        base_sequence=99,
        is_transactional=True,
    )
    header, records = decode_batch(batch)
    assert (
        header.base_offset,
        header.partition_leader_epoch,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
    ) == (42, 7, 1234, 3, 99)
    assert header.is_transactional and not header.is_control
    assert records == [Record(42, 10, None, b"v", ())]


def test_log_append_time_gives_every_record_the_max_timestamp():
    batch = encode_batch(
        [(None, b"a", None, 10), (None, b"b", None, 30), (None, b"c", None, 20)],
        log_append_time=True,
    )
    assert [r.timestamp for r in decode_records(batch)] == [30, 30, 30]
    into = decode_records(batch, into=(ConsumerRecord, "t", 0))
    assert [(r.offset, r.timestamp, r.value) for r in into] == [
        (0, 30, b"a"),
        (1, 30, b"b"),
        (2, 30, b"c"),
    ]
    assert all(type(r) is ConsumerRecord for r in into)


def test_skip_control_drops_marker_batches():
    data = encode_batch([(None, b"a", None, 1)])
    marker = encode_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", None, 2)],
        base_offset=1,
        is_control=True,
        is_transactional=True,
    )
    both = data + marker
    assert [r.offset for r in decode_records(both)] == [0, 1]
    assert [r.offset for r in decode_records(both, skip_control=True)] == [0]
    assert [h.is_control for _, h in iter_batches(both)] == [False, True]


def test_encode_is_deterministic():
    records = [(b"k", b"v" * 500, [("a", b"b")], BASE_TS)] * 10
    for codec in CODECS:
        assert encode_batch(records, compression=codec) == encode_batch(records, compression=codec)


def test_count_and_iter_batches():
    batches = [
        encode_batch([(None, b"x", None, 1)] * n, base_offset=o)
        for n, o in ((3, 0), (5, 3), (1, 8))
    ]
    buf = b"".join(batches)
    assert count_records(buf) == 9
    positions = [pos for pos, _ in iter_batches(buf)]
    assert positions == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [h.next_offset for _, h in iter_batches(buf)] == [3, 8, 9]


def test_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([])
