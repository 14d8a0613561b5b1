"""max_request_size and batch_size as Kafka's producer has them (max.request.size, batch.size):
a record whose batch of one would exceed max_request_size (or buffer_memory) is refused when it
is sent, naming the setting, with nothing queued; a record larger than batch_size goes in a
batch of its own. The accumulator driven as plain data, then the producer's send calls."""

from __future__ import annotations

import pathlib
import sys

import pytest

from clients.errors import ErrorCode, RecordTooLarge
from clients.producer import AsyncProducer
from clients.producer.accumulator import BATCH_OVERHEAD, RECORD_OVERHEAD

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_accumulator import ANY, LEADERS, make  # noqa: E402

LIMIT = 2000
LARGEST = LIMIT - BATCH_OVERHEAD - RECORD_OVERHEAD  # the largest value a record may carry


def test_a_record_over_max_request_size_is_refused_naming_the_setting():
    acc = make(max_request_size=LIMIT, batch_size=500)
    with pytest.raises(
        RecordTooLarge, match=r"max_request_size=2000 \(Kafka's max.request.size\)"
    ) as info:
        acc.append("t", 0, None, b"v" * (LARGEST + 1), None, 1, now_ms=0)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert f"is {LIMIT + 1} bytes" in info.value.message
    assert acc.buffered_bytes == 0 and not acc.has_undrained()


def test_the_key_and_headers_count_toward_the_limit():
    acc = make(max_request_size=LIMIT)
    with pytest.raises(RecordTooLarge):
        acc.append("t", 0, b"k", b"v" * LARGEST, None, 1, now_ms=0)
    with pytest.raises(RecordTooLarge):
        acc.append("t", 0, None, b"v" * (LARGEST - 5), [("h", b"1")], 1, now_ms=0)
    assert not acc.has_undrained()


def test_a_record_of_exactly_the_limit_is_sent():
    acc = make(max_request_size=LIMIT, batch_size=500, linger_ms=0)
    acc.append("t", 0, None, b"v" * LARGEST, None, 1, now_ms=0)
    [batch] = acc.drain(0, LEADERS.get, ANY).requests[0]
    assert batch.size == LIMIT


def test_a_record_over_buffer_memory_is_refused_naming_it():
    acc = make(max_request_size=10_000, buffer_memory=1000)
    with pytest.raises(RecordTooLarge, match=r"buffer_memory=1000 \(Kafka's buffer.memory\)"):
        acc.append("t", 0, None, b"v" * 1000, None, 1, now_ms=0)


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = make(batch_size=500, max_request_size=LIMIT, linger_ms=1000)
    small = b"s" * 50
    acc.append("t", 0, None, small, None, 1, now_ms=0)
    acc.append("t", 0, None, b"L" * 1200, None, 2, now_ms=0)  # over batch_size
    acc.append("t", 0, None, small, None, 3, now_ms=0)
    batches = acc.drain(0, LEADERS.get, ANY).requests[0]
    # The first two batches are closed and go; the third (open) lingers.
    assert [[r[3] for r in b.records] for b in batches] == [[1], [2]]
    assert batches[1].size == BATCH_OVERHEAD + RECORD_OVERHEAD + 1200
    assert acc.has_undrained()


def test_send_batch_refuses_every_record_if_one_is_too_large():
    acc = make(max_request_size=LIMIT)
    values = [b"a", b"v" * (LARGEST + 1), b"c"]
    with pytest.raises(RecordTooLarge):
        acc.append_many("t", 0, None, values, 1, now_ms=0)
    with pytest.raises(RecordTooLarge):
        acc.append_many("t", 0, [b"k", b"k", b"k"], [b"a", b"v" * LARGEST, b"c"], 1, now_ms=0)
    assert acc.buffered_bytes == 0 and not acc.has_undrained()


async def test_the_producer_raises_at_send_and_queues_nothing():
    producer = AsyncProducer("127.0.0.1:1", max_request_size=LIMIT)  # never started: no I/O
    with pytest.raises(RecordTooLarge, match="max_request_size=2000"):
        await producer.send("t", b"v" * LIMIT)
    with pytest.raises(RecordTooLarge, match="max_request_size=2000"):
        await producer.send_batch("t", [b"v" * LIMIT])
    assert producer._acc.buffered_bytes == 0


def test_a_max_request_size_no_channel_carries_is_refused_naming_it():
    with pytest.raises(ValueError, match="max_request_size=1073741824 must be between"):
        AsyncProducer("127.0.0.1:1", max_request_size=1 << 30)
