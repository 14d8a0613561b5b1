"""The sender hands a drained ProduceRequest to grpcio in the very step that drains it, not one
trio scheduling round later in a new task: with linger_ms=0 that round is pure latency. And an
idempotent sender bumps its epoch only once no request of the old one is out."""

from __future__ import annotations

import threading

import trio
import trio.testing

from clients.partitioner import StickyPartitioner, default_partition
from clients.producer.accumulator import RecordAccumulator
from clients.producer.future import BatchResult, RecordFuture
from clients.producer.idempotence import NEEDS_BUMP, IdempotenceManager
from clients.producer.sender import Sender, now_ms
from clients.record.compression import codec_from_name
from clients.wire import broker_pb2


class _Future:
    def add_done_callback(self, fn) -> None:
        pass

    def cancel(self) -> None:
        pass


class _Stub:
    def __init__(self) -> None:
        self.issued: list = []
        self.Produce = self

    def future(self, request, timeout):
        self.issued.append(request)
        return _Future()


class _Metadata:
    leaders = {("t", 0): 1}


class _Cluster:
    def __init__(self) -> None:
        self.metadata = _Metadata()
        self.stub = _Stub()

    def broker_stub(self, node: int) -> _Stub:
        return self.stub


def _accumulator() -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=16384,
        linger_ms=0,
        max_request_size=1 << 20,
        delivery_timeout_ms=120000,
        retry_backoff_ms=100,
        max_in_flight=1,
        partitioner=StickyPartitioner(),
        key_partitioner=default_partition,
        new_result=BatchResult,
        make_future=RecordFuture,
    )


def _sender(acc: RecordAccumulator) -> tuple[Sender, _Cluster]:
    acc.set_num_partitions("t", 1)
    cluster = _Cluster()
    sender = Sender(
        acc,
        threading.Lock(),
        cluster,
        acks=1,
        compression=codec_from_name("none"),
        request_timeout_ms=1000,
        max_in_flight_per_node=5,
        retries=0,
    )
    sender._metadata_wanted = False
    sender._last_metadata_ms = now_ms()
    return sender, cluster


async def test_the_request_leaves_before_the_sender_yields():
    acc = _accumulator()
    sender, cluster = _sender(acc)
    acc.append("t", 0, None, b"v", None, 1, now_ms())
    async with trio.open_nursery() as nursery:
        sender._nursery = nursery
        sender._step()
        # No checkpoint since the step: the request must already be with grpcio.
        assert len(cluster.stub.issued) == 1
        issued = broker_pb2.ProduceRequest.FromString(cluster.stub.issued[0])  # sent serialized
        assert issued.topics[0].partitions[0].partition == 0
        nursery.cancel_scope.cancel()


async def test_a_wake_from_a_sending_thread_issues_in_the_callback_itself():
    """A sending thread's wake-up (run_sync_soon) drains and issues right there, not by waking
    the sender task for another scheduling round."""
    acc = _accumulator()
    sender, cluster = _sender(acc)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        await trio.testing.wait_all_tasks_blocked()
        acc.append("t", 0, None, b"v", None, 1, now_ms())
        sender.wake_from_thread()
        assert len(cluster.stub.issued) == 1
        nursery.cancel_scope.cancel()


async def test_a_new_epoch_waits_until_every_request_of_the_old_one_is_answered():
    """With several requests of a partition out, one landing after the epoch bump would be
    fenced (INVALID_PRODUCER_EPOCH) and its records lost: InitProducerId waits for them."""
    acc = _accumulator()
    sender, _cluster = _sender(acc)
    sender.idempotence = IdempotenceManager()
    sender.idempotence.set_producer(5, 0)
    sender.idempotence.state = NEEDS_BUMP
    started = []
    sender._nursery = type("N", (), {"start_soon": lambda self, fn, *a: started.append(fn)})()
    sender._in_flight[1] = 1
    sender._maybe_init_producer_id(now_ms(), None)
    assert started == []
    sender._in_flight[1] = 0
    sender._maybe_init_producer_id(now_ms(), None)
    assert started == [sender._init_producer_id]
