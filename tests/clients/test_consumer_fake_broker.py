"""Consumer against the fake broker over real gRPC: round trips with the producer (async and
blocking), seeks, offset resets, offsets_for_times, fetch errors that refresh metadata."""

from __future__ import annotations

import pathlib
import sys

import pytest
import trio

from clients.consumer import AsyncConsumer, Consumer, ConsumerRecord
from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer, Producer
from clients.types import TopicPartition

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@pytest.fixture
def broker():
    b = FakeBroker().start()
    b.create("t", 2)
    yield b
    b.stop()


async def produce(broker, n, partition=0, start=0, ts0=1000):
    async with AsyncProducer(broker.address, linger_ms=0, batch_size=500) as p:
        for i in range(start, start + n):
            await p.send(
                "t",
                b"v%d" % i,
                key=b"k%d" % i,
                partition=partition,
                timestamp_ms=ts0 + i,
                headers=[("i", b"%d" % i)] if i % 2 else None,
            )
        await p.flush()


async def poll_n(c, n, timeout=5.0):
    out = []
    with trio.fail_after(timeout):
        while len(out) < n:
            out += await c.poll(timeout_ms=200)
    return out


async def test_round_trip_from_the_beginning(broker):
    await produce(broker, 300)
    async with AsyncConsumer(
        broker.address, auto_offset_reset="earliest", max_poll_records=64
    ) as c:
        c.assign([TP0])
        assert c.assignment() == {TP0}
        records = await poll_n(c, 300)
        assert len(await c.poll(timeout_ms=1)) == 0
        assert await c.position(TP0) == 300
    assert [r.offset for r in records] == list(range(300))
    assert records[3] == ConsumerRecord("t", 0, 3, 1003, b"k3", b"v3", (("i", b"3"),))
    assert records[4].headers == ()


async def test_latest_sees_only_new_data_and_poll_waits_for_it(broker):
    await produce(broker, 10)
    async with AsyncConsumer(broker.address, fetch_max_wait_ms=100) as c:
        c.assign([TP0])
        assert await c.position(TP0) == 10
        assert await c.poll(timeout_ms=50) == []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce, broker, 5, 0, 10)
            records = await poll_n(c, 5)
    assert [r.offset for r in records] == [10, 11, 12, 13, 14]


async def test_seek_seek_to_beginning_and_end(broker):
    await produce(broker, 20)
    await produce(broker, 4, partition=1)
    async with AsyncConsumer(broker.address) as c:
        c.assign([TP0, TP1])
        c.seek(TP0, 15)
        c.seek_to_beginning(TP1)
        got = await poll_n(c, 9)
        assert sorted((r.partition, r.offset) for r in got) == [
            (0, 15),
            (0, 16),
            (0, 17),
            (0, 18),
            (0, 19),
            (1, 0),
            (1, 1),
            (1, 2),
            (1, 3),
        ]
        c.seek_to_beginning(TP0)
        assert await c.position(TP0) == 0
        first = await poll_n(c, 1)
        assert first[0].offset == 0
        c.seek_to_end()
        assert await c.position(TP0) == 20 and await c.position(TP1) == 4
        assert await c.poll(timeout_ms=50) == []
        with pytest.raises(KraftError):
            c.seek(TopicPartition("t", 9), 0)


async def test_offset_lookups(broker):
    await produce(broker, 10, ts0=5000)
    async with AsyncConsumer(broker.address) as c:
        assert await c.partitions_for_topic("t") == [0, 1]
        assert await c.beginning_offsets([TP0, TP1]) == {TP0: 0, TP1: 0}
        assert await c.end_offsets([TP0]) == {TP0: 10}
        found = await c.offsets_for_times({TP0: 5004, TP1: 1})
        assert found == {TP0: (4, 5004), TP1: None}
        with pytest.raises(KraftError) as info:
            await c.partitions_for_topic("nope")
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_out_of_range_resets_by_policy(broker):
    await produce(broker, 5)
    async with AsyncConsumer(broker.address, auto_offset_reset="earliest") as c:
        c.assign([TP0])
        c.seek(TP0, 100)
        records = await poll_n(c, 5)
    assert records[0].offset == 0


async def test_fetch_not_leader_refreshes_metadata(broker):
    await produce(broker, 5)
    broker.fetch_errors.append(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    async with AsyncConsumer(broker.address, auto_offset_reset="earliest") as c:
        c.assign([TP0])
        calls = broker.metadata_calls
        records = await poll_n(c, 5)
    assert len(records) == 5 and broker.metadata_calls > calls


async def test_non_retriable_fetch_error_surfaces_in_poll(broker):
    await produce(broker, 1)
    broker.fetch_errors.append(ErrorCode.CORRUPT_MESSAGE + 1000)  # an unknown code
    async with AsyncConsumer(broker.address, auto_offset_reset="earliest") as c:
        c.assign([TP0])
        with pytest.raises(KraftError):
            await poll_n(c, 1)
        assert len(await poll_n(c, 1)) == 1


def test_blocking_round_trip(broker):
    with Producer(broker.address, linger_ms=1) as p:
        futures = [p.send("t", b"%d" % i, partition=i % 2) for i in range(1000)]
        p.flush()
    assert futures[-1].result().offset == 499
    with Consumer(broker.address, auto_offset_reset="earliest", max_poll_records=100) as c:
        c.assign([TP0, TP1])
        got = []
        while len(got) < 1000:
            batch = c.poll(timeout_ms=2000)
            assert batch, "poll timed out"
            assert len(batch) <= 100
            got += batch
        assert c.poll(timeout_ms=10) == []
        assert c.position(TP0) == 500
        assert c.end_offsets([TP0, TP1]) == {TP0: 500, TP1: 500}
        assert c.offsets_for_times({TP0: 0})[TP0][0] == 0
        assert c.partitions_for_topic("t") == [0, 1]
        c.seek(TP1, 498)
        again = c.poll(timeout_ms=2000)
        assert [(r.partition, r.offset) for r in again] == [(1, 498), (1, 499)]
    assert sorted(int(r.value) for r in got) == list(range(1000))


async def test_no_position_with_reset_none_is_an_error(broker):
    async with AsyncConsumer(broker.address, auto_offset_reset="none") as c:
        c.assign([TP0])
        with pytest.raises(KraftError) as info:
            await c.poll(timeout_ms=10)
        assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
        c.seek(TP0, 0)
        assert await c.poll(timeout_ms=10) == []
