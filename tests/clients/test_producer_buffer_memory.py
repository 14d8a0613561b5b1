"""buffer_memory and max_block_ms as in Kafka: when the records waiting unsent fill the buffer,
`send` waits (up to max_block_ms) for the brokers to take some, then raises; `send_nowait`
raises at once. Against the fake broker holding its Produce answers back."""

from __future__ import annotations

import pathlib
import sys
import threading
import time

import pytest
import trio

from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer, BufferFull, Producer

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402

VALUE = b"x" * 200
SMALL = dict(buffer_memory=1000, batch_size=500, linger_ms=0)


@pytest.fixture
def held_broker():
    """A broker whose Produce answers wait until the test sets `produce_gate`."""
    b = FakeBroker().start()
    b.create("t", 1)
    b.produce_gate.clear()
    yield b
    b.produce_gate.set()
    b.stop()


async def test_send_waits_for_room_and_every_record_gets_through(held_broker):
    async with AsyncProducer(held_broker.address, max_block_ms=30_000, **SMALL) as p:
        futures = []

        async def send_all():
            for _i in range(20):  # 4000 bytes through a 1000-byte buffer
                futures.append(await p.send("t", VALUE, partition=0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_all)
            await trio.sleep(0.3)
            blocked_at = len(futures)
            held_broker.produce_gate.set()
        await p.flush()
    assert blocked_at < 20  # it waited for room instead of raising
    assert [f.result().offset for f in futures] == list(range(20))


async def test_send_gives_up_after_max_block_ms(held_broker, autojump_clock):
    async with AsyncProducer(held_broker.address, max_block_ms=5_000, **SMALL) as p:
        sent = 0
        start = trio.current_time()
        with pytest.raises(KraftError) as info:
            while True:
                await p.send("t", VALUE, partition=0)
                sent += 1
        waited = trio.current_time() - start
        held_broker.produce_gate.set()
    assert info.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert "max_block_ms=5000" in info.value.message and "buffer_memory=1000" in info.value.message
    assert 5 <= sent <= 6 and waited >= 5.0


async def test_send_nowait_raises_buffer_full_at_once(held_broker):
    async with AsyncProducer(held_broker.address, **SMALL) as p:
        with pytest.raises(BufferFull) as info:
            for _ in range(10):
                p.send_nowait("t", VALUE, partition=0)
        assert info.value.code == ErrorCode.REQUEST_TIMED_OUT and "await send()" in str(info.value)
        held_broker.produce_gate.set()


def test_blocking_send_waits_for_room_then_gives_up_after_max_block_ms(held_broker):
    with Producer(held_broker.address, max_block_ms=20_000, **SMALL) as p:
        threading.Timer(0.3, held_broker.produce_gate.set).start()
        futures = [p.send("t", VALUE, partition=0) for _ in range(20)]
        assert [f.result(10).offset for f in futures] == list(range(20))
    held_broker.produce_gate.clear()
    with Producer(held_broker.address, max_block_ms=300, **SMALL) as p:
        start = time.monotonic()
        with pytest.raises(KraftError) as info:
            for _ in range(20):
                p.send("t", VALUE, partition=0)
        assert time.monotonic() - start >= 0.3 and "max_block_ms=300" in info.value.message
        held_broker.produce_gate.set()
