"""Every client path that talks to a partition's leader gets over a leader that died: a failed
connection forgets that leader, the metadata is asked again (with backoff) until it names the new
one, and the request is retried there. The fake broker names a dead address as the leader (a
killed node not fenced yet), then itself again (the new leader, a newer epoch)."""

from __future__ import annotations

import pathlib
import socket
import sys

import pytest
import trio

from clients.consumer import AsyncConsumer, Consumer
from clients.producer import AsyncProducer, Producer
from clients.types import TopicPartition

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402

TP = TopicPartition("t", 0)


def nothing_listens() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def broker():
    b = FakeBroker().start()
    b.create("t", 1)
    with Producer(b.address, linger_ms=0) as p:
        for i in range(5):
            p.send("t", b"v%d" % i, partition=0)
    b.dead_leader = nothing_listens()
    yield b
    b.stop()


def elect_new_leader(broker: FakeBroker) -> None:
    broker.leader_epoch += 1
    broker.dead_leader = None


async def test_a_consumer_started_while_the_leader_is_dead_reads_once_a_new_one_leads(broker):
    async with AsyncConsumer(
        broker.address, auto_offset_reset="earliest", fetch_max_wait_ms=50
    ) as consumer:
        consumer.assign([TP])
        assert await consumer.poll(timeout_ms=500) == []  # its reset goes to the dead leader
        elect_new_leader(broker)
        with trio.fail_after(10):
            records = []
            while len(records) < 5:
                records += await consumer.poll(timeout_ms=200)
    assert [r.value for r in records] == [b"v%d" % i for i in range(5)]


async def test_position_and_end_offsets_wait_out_a_dead_leader(broker):
    async with AsyncConsumer(
        broker.address, auto_offset_reset="earliest", request_timeout_ms=10_000
    ) as consumer:
        consumer.assign([TP])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_elect_after, broker, 0.5)
            with trio.fail_after(10):
                assert await consumer.position(TP) == 0
        broker.dead_leader = nothing_listens()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_elect_after, broker, 0.5)
            with trio.fail_after(10):
                assert await consumer.end_offsets([TP]) == {TP: 5}


def test_the_blocking_consumer_reads_once_a_new_leader_leads(broker):
    with Consumer(broker.address, auto_offset_reset="earliest", fetch_max_wait_ms=50) as c:
        c.assign([TP])
        assert c.poll(timeout_ms=500) == []
        elect_new_leader(broker)
        records = []
        for _ in range(50):
            records += c.poll(timeout_ms=200)
            if len(records) >= 5:
                break
    assert [r.offset for r in records] == list(range(5))


async def test_a_producer_sends_to_the_new_leader(broker):
    async with AsyncProducer(broker.address, linger_ms=0, retry_backoff_ms=20) as p:
        future = await p.send("t", b"after", partition=0)
        await trio.sleep(0.5)
        assert not future.done()
        elect_new_leader(broker)
        with trio.fail_after(10):
            await p.flush()
    assert future.result().offset == 5


async def test_commits_and_committed_find_the_new_coordinator():
    from fake_group_coordinator import fake_cluster

    with fake_cluster(1) as (broker, coordinator):
        broker.dead_leader = nothing_listens()
        async with AsyncConsumer(broker.address, group_id="g", request_timeout_ms=10_000) as c:
            c.assign([TP])
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_elect_after, broker, 0.5)
                with trio.fail_after(10):
                    await c.commit({TP: 3})
            assert await c.committed([TP]) == {TP: 3}


async def _elect_after(broker: FakeBroker, seconds: float) -> None:
    await trio.sleep(seconds)
    elect_new_leader(broker)
