"""Records sent to one partition are stored in send order, even with several requests in flight:
gRPC may run two calls of one channel in either order on the server, so the producer never has
two requests for the same partition out at once."""

from __future__ import annotations

import pathlib
import sys
import threading

from clients.producer import Producer

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


class SlowFirstProduceBroker(FakeBroker):
    """The first Produce waits while later ones go straight through, as a busy server thread may."""

    def __init__(self) -> None:
        super().__init__()
        self._first = threading.Lock()
        self._seen = 0
        self.first_arrived = threading.Event()

    def Produce(self, req, ctx):
        with self._first:
            self._seen += 1
            first = self._seen == 1
        if first:
            self.first_arrived.set()
            threading.Event().wait(0.5)
        return super().Produce(req, ctx)


def test_two_requests_for_one_partition_never_overtake_each_other():
    broker = SlowFirstProduceBroker().start()
    try:
        broker.create("t", 1)
        with Producer(
            broker.address,
            acks=1,
            linger_ms=0,
            batch_size=200,
            max_in_flight_requests_per_connection=5,
        ) as producer:
            futures = [producer.send("t", b"value-%04d" % i, partition=0) for i in range(10)]
            assert broker.first_arrived.wait(10)  # the first request is out and held
            futures += [producer.send("t", b"value-%04d" % i, partition=0) for i in range(10, 300)]
            producer.flush(timeout=20)
        offsets = [f.result(timeout=0).offset for f in futures]
        assert offsets == sorted(offsets) == list(range(300))
    finally:
        broker.stop()
