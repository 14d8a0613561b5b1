"""Producer against the fake broker over real gRPC: futures carry the right offsets, equal keys
share a partition, retriable errors are retried, NOT_LEADER refreshes metadata, unknown topics fail;
send_batch puts many records where send would, in order, with one delivery report each."""

from __future__ import annotations

import pathlib
import sys
import threading

import pytest
import trio

from clients.errors import ErrorCode, KraftError
from clients.partitioner import default_partition
from clients.producer import AsyncProducer, Producer, RecordMetadata

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()


async def test_futures_carry_dense_offsets_and_data_lands(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, linger_ms=1, batch_size=300) as p:
        futures = [await p.send("t", b"v%d" % i, timestamp_ms=1000 + i) for i in range(50)]
        await p.flush()
        assert all(f.done() for f in futures)
        metas = [f.result() for f in futures]
    assert [m.offset for m in metas] == list(range(50))
    assert metas[7] == RecordMetadata("t", 0, 7, 1007)
    stored = broker.records("t", 0)
    assert [r.value for r in stored] == [b"v%d" % i for i in range(50)]
    assert [r.offset for r in stored] == list(range(50))


async def test_send_and_wait_and_partitions_for(broker):
    broker.create("t", 3)
    async with AsyncProducer(broker.address) as p:
        assert await p.partitions_for("t") == [0, 1, 2]
        meta = await p.send_and_wait("t", b"x", partition=2, headers=[("h", b"1")])
        assert (meta.partition, meta.offset) == (2, 0)
        bad = await p.send("t", b"x", partition=5)
        with pytest.raises(KraftError) as info:
            bad.result(0)
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_equal_keys_go_to_one_partition(broker):
    broker.create("k", 4)
    async with AsyncProducer(broker.address) as p:
        futures = [await p.send("k", b"v", key=b"user-%d" % (i % 5)) for i in range(40)]
        await p.flush()
    by_key: dict = {}
    for i, f in enumerate(futures):
        by_key.setdefault(i % 5, set()).add(f.result().partition)
    for k, parts in by_key.items():
        assert parts == {default_partition(b"user-%d" % k, 4)}


async def test_retriable_error_is_retried(broker):
    broker.create("t", 1)
    broker.produce_errors.extend([ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT])
    async with AsyncProducer(broker.address, retry_backoff_ms=10) as p:
        meta = await p.send_and_wait("t", b"v")
    assert meta.offset == 0 and broker.produce_calls == 3
    assert len(broker.records("t", 0)) == 1


async def test_not_leader_refreshes_metadata_then_succeeds(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, retry_backoff_ms=10) as p:
        await p.send_and_wait("t", b"first")
        calls = broker.metadata_calls
        broker.produce_errors.append(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        meta = await p.send_and_wait("t", b"second")
    assert meta.offset == 1 and broker.metadata_calls > calls


async def test_non_retriable_error_fails_the_batch(broker):
    broker.create("t", 1)
    broker.produce_errors.append(ErrorCode.INVALID_RECORD)
    async with AsyncProducer(broker.address) as p:
        with pytest.raises(KraftError) as info:
            await p.send_and_wait("t", b"v")
    assert info.value.code == ErrorCode.INVALID_RECORD and "t-0" in info.value.message


async def test_retries_are_bounded_by_delivery_timeout(broker):
    broker.create("t", 1)
    broker.produce_errors.extend([ErrorCode.NOT_ENOUGH_REPLICAS] * 1000)
    async with AsyncProducer(broker.address, retry_backoff_ms=20, delivery_timeout_ms=300) as p:
        with pytest.raises(KraftError) as info:
            await p.send_and_wait("t", b"v")
    assert info.value.code in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT)


async def test_unknown_topic_fails_without_auto_create(broker):
    async with AsyncProducer(broker.address, retry_backoff_ms=20) as p:
        with trio.fail_after(10):
            with pytest.raises(KraftError) as info:
                await p.send_and_wait("nope", b"v")
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "kraft topic create nope" in info.value.message


async def test_topic_auto_created_by_metadata_gets_the_data():
    broker = FakeBroker(auto_create=True, default_partitions=2).start()
    try:
        async with AsyncProducer(broker.address) as p:
            futures = [await p.send("fresh", b"v%d" % i) for i in range(10)]
            await p.flush()
        assert sorted(f.result().offset for f in futures if f.result().partition == 0) == list(
            range(sum(1 for f in futures if f.result().partition == 0))
        )
    finally:
        broker.stop()


async def test_acks_zero_completes_without_offsets(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, acks=0) as p:
        meta = await p.send_and_wait("t", b"v")
    assert meta.offset == -1


def test_blocking_producer_from_several_threads(broker):
    broker.create("t", 2)
    with Producer(broker.address, linger_ms=2, acks="all") as p:
        results = []

        def work(n):
            fs = [p.send("t", b"%d" % i, partition=n) for i in range(500)]
            results.append((n, [f.result(10).offset for f in fs]))

        threads = [threading.Thread(target=work, args=(n,)) for n in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        p.flush(5)
        assert p.partitions_for("t") == [0, 1]
        seen = []
        last = p.send("t", b"cb", partition=0)
        last.add_done_callback(seen.append)
    assert sorted(results) == [(0, list(range(500))), (1, list(range(500)))]
    assert seen == [last] and last.result().offset == 500


def test_blocking_producer_close_fails_what_it_could_not_send():
    p = Producer("127.0.0.1:1", request_timeout_ms=200, retry_backoff_ms=20)
    f = p.send("t", b"v")
    p.close(timeout=0.3)
    with pytest.raises(KraftError):
        f.result(1)


# --- send_batch: many records in one call, no future each ---------------------------------


async def test_values_land_in_order_with_dense_offsets_across_batches(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, batch_size=400, linger_ms=1) as p:
        await p.partitions_for("t")
        values = [b"v%03d" % i for i in range(100)]
        future = await p.send_batch("t", values, partition=0, timestamp_ms=5)
        assert len(future._parts) > 1  # 100 records spread over several batches
        await p.flush()
        metas = future.result(1)
    assert [m.offset for m in metas] == list(range(100))
    assert metas[3] == RecordMetadata("t", 0, 3, 5)
    assert [r.value for r in broker.records("t", 0)] == values


async def test_keys_go_where_send_puts_them(broker):
    broker.create("k", 4)
    async with AsyncProducer(broker.address) as p:
        await p.partitions_for("k")
        keys = [b"user-%d" % i for i in range(20)]
        future = await p.send_batch("k", [b"x"] * 20, keys)
        await p.flush()
        metas = future.result(1)
    assert [m.partition for m in metas] == [default_partition(k, 4) for k in keys]


def test_delivery_reports_one_per_record_from_the_blocking_producer(broker):
    broker.create("d", 1)
    reports = []
    with Producer(broker.address, batch_size=300) as p:
        p.partitions_for("d")
        future = p.send_batch(
            "d",
            [b"a", b"b", b"c"] * 10,
            on_delivery=lambda err, md: reports.append((err, md.offset)),
        )
        p.flush()
        assert future.done() and future.exception() is None
    assert reports == [(None, i) for i in range(30)]


def test_before_metadata_and_errors(broker):
    broker.create("m", 2)
    with Producer(broker.address) as p:
        # The topic's metadata is not known yet: the records wait for it, as with `send`.
        future = p.send_batch("m", [b"1", b"2"], partition=1)
        assert [m.offset for m in future.result(5)] == [0, 1]
        bad = p.send_batch("m", [b"1"], partition=7)
        with pytest.raises(KraftError) as info:
            bad.result(1)
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(ValueError, match="keys"):
            p.send_batch("m", [b"1", b"2"], [b"k"])
