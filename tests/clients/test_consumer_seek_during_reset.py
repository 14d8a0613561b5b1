"""A seek made while the consumer is still resolving its default offset reset wins: the stale
answer for auto_offset_reset=latest must not overwrite seek_to_beginning (found by hand: the
consumer then skipped the whole log)."""

from __future__ import annotations

import pathlib
import sys
import threading

from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


class SlowMetadataBroker(FakeBroker):
    """Holds Metadata answers until released, so a test can act while a refresh is out."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def Metadata(self, req, ctx):
        self.asked.set()
        self.release.wait(10)
        return super().Metadata(req, ctx)


def test_seek_to_beginning_during_the_default_reset_reads_from_the_start():
    broker = SlowMetadataBroker().start()
    try:
        broker.create("t", 1)
        with Producer(broker.address, linger_ms=0) as producer:
            for i in range(50):
                producer.send("t", b"v%d" % i, partition=0)
            producer.flush(timeout=10)
        tp = TopicPartition("t", 0)
        broker.asked.clear()
        broker.release.clear()
        with Consumer(broker.address, auto_offset_reset="latest") as consumer:
            consumer.assign([tp])  # queues the default reset to the log end
            assert broker.asked.wait(10)  # the fetcher took its snapshot and asked
            consumer.seek_to_beginning(tp)  # the user's seek lands meanwhile
            broker.release.set()
            got = []
            for _ in range(20):
                got += consumer.poll(timeout_ms=500)
                if len(got) >= 50:
                    break
        assert [r.offset for r in got] == list(range(50))
    finally:
        broker.release.set()
        broker.stop()
