"""A blocking Consumer busy with a backlog (every poll returns records, a little work per batch)
still joins a rebalance another member starts within seconds, as Kafka's consumer does within one
poll of the heartbeat's REBALANCE_IN_PROGRESS. A guard with bounds generous for a loaded machine:
the reported 35 s stall did not reproduce, on real nodes or here."""

from __future__ import annotations

import pathlib
import sys
import threading
import time

from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition as TP

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from fake_group_coordinator import fake_cluster  # noqa: E402

BACKLOG = 120_000
MEMBER = dict(
    group_id="g",
    session_timeout_ms=3000,
    heartbeat_interval_ms=100,
    auto_offset_reset="earliest",
    fetch_max_wait_ms=50,
    retry_backoff_ms=20,
)


def test_a_member_reading_a_backlog_gives_partitions_to_a_newcomer_within_heartbeats():
    with fake_cluster(4) as (broker, _coordinator):
        with Producer(broker.address, linger_ms=5, batch_size=65536) as p:
            for i in range(BACKLOG):
                p.send("t", b"%d" % i, partition=i % 4)
        busy = Consumer(broker.address, client_id="busy", **MEMBER)
        busy.subscribe(["t"])
        stop, polled = threading.Event(), []

        def read_backlog():
            while not stop.is_set():
                records = busy.poll(timeout_ms=1000, max_records=50)
                polled.append(len(records))
                spin = time.perf_counter() + 0.002  # a little work per batch, GIL held
                while time.perf_counter() < spin:
                    pass

        reader = threading.Thread(target=read_backlog)
        reader.start()
        try:
            deadline = time.monotonic() + 10
            while len(busy.assignment()) < 4 or sum(polled) == 0:
                assert time.monotonic() < deadline, "the first member never started reading"
                time.sleep(0.02)
            with Consumer(broker.address, client_id="newcomer", **MEMBER) as newcomer:
                newcomer.subscribe(["t"])
                start = time.monotonic()
                while not newcomer.assignment():
                    newcomer.poll(timeout_ms=50)
                    assert time.monotonic() - start < 15, (
                        f"no partitions for the newcomer after 15 s; busy has {busy.assignment()}"
                    )
                # Still inside the backlog when the rebalance came (a revoking member's polls
                # may be empty for a moment, so count records, not empty polls).
                assert sum(polled) < BACKLOG, "the backlog ran out: a test of nothing"
                while len(busy.assignment()) != 2:  # its own assignment lands a moment later
                    assert time.monotonic() - start < 30, busy.assignment()
                    newcomer.poll(timeout_ms=20)  # a member that stops polling stalls joins
                assert len(newcomer.assignment()) == 2
                assert busy.assignment() | newcomer.assignment() == {TP("t", p) for p in range(4)}
        finally:
            stop.set()
            reader.join(10)
            busy.close()
