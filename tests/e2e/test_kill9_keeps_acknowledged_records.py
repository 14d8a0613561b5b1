"""kill -9 of a node while a producer (acks=1) is writing loses no acknowledged record: after a
restart on the same data dir every acknowledged record is read back at its acknowledged offset."""

from __future__ import annotations

import threading
import time

import pytest

from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

pytestmark = pytest.mark.e2e


def test_kill9_during_produce_loses_no_acknowledged_record(node):
    acked: dict[int, bytes] = {}
    lock = threading.Lock()
    stop = threading.Event()
    producer = Producer(
        node.address,
        acks=1,
        linger_ms=1,
        delivery_timeout_ms=3000,
        request_timeout_ms=1000,
        retry_backoff_ms=50,
    )

    def remember(value: bytes):
        def done(future) -> None:
            if future.exception() is None:
                with lock:
                    acked[future.result().offset] = value

        return done

    def write() -> None:
        i = 0
        while not stop.is_set():
            value = b"record-%08d" % i
            producer.send("durable", value).add_done_callback(remember(value))
            i += 1
            if i % 500 == 0:
                time.sleep(0.005)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 5000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) >= 5000, "the producer made no progress"
        node.kill9()
        time.sleep(0.2)
    finally:
        stop.set()
        writer.join(30)
        producer.close(timeout=10)
    with lock:
        acknowledged = dict(acked)

    node.start()
    tp = TopicPartition("durable", 0)
    read: dict[int, bytes] = {}
    with Consumer(node.address) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(acknowledged) <= set(read):
            for r in consumer.poll(timeout_ms=500):
                assert r.offset not in read, f"offset {r.offset} delivered twice"
                read[r.offset] = r.value
    missing = [o for o in acknowledged if o not in read]
    assert not missing, f"{len(missing)} acknowledged records lost, first at offset {min(missing)}"
    assert all(read[o] == v for o, v in acknowledged.items())
    assert sorted(read) == list(range(len(read)))
