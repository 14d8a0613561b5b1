"""kill -9 torture: many kill -9 / restart cycles at random moments while a producer writes; every
acknowledged record is read back at its acknowledged offset afterwards, and no offset twice.
Single node with acks=1, and 1 controller + 3 brokers with RF=3 acks=all (min.insync.replicas=2:
one broker killed at a time). CI runs a few cycles; KRAFT_TORTURE_CYCLES=100 is the full run
(BENCHMARKS.md). The seed is printed; KRAFT_TORTURE_SEED replays one."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest
from test_replication_failover import FAST, partition_state
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.producer import Producer
from clients.types import TopicPartition

CYCLES = int(os.environ.get("KRAFT_TORTURE_CYCLES", "6"))
# A cycle takes a few seconds (a broker's rejoin most of them): the full run needs its own limit.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120 + 30 * CYCLES)]


def _rng() -> random.Random:
    seed = int(os.environ.get("KRAFT_TORTURE_SEED", random.randrange(1 << 30)))
    print(f"kill -9 torture: seed {seed} ({CYCLES} cycles)")
    return random.Random(seed)


class Writer:
    """Sends numbered values from a thread for as long as it runs; remembers each acknowledged
    one at its offset. Sends that fail (the node is down) are simply not acknowledged."""

    def __init__(self, bootstrap: str, topic: str, acks) -> None:
        self.topic = topic
        self.acked: dict[int, bytes] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.producer = Producer(
            bootstrap,
            acks=acks,
            linger_ms=2,
            delivery_timeout_ms=4000,
            request_timeout_ms=1500,
            retry_backoff_ms=50,
        )
        self.thread = threading.Thread(target=self._write)

    def _write(self) -> None:
        i = 0
        while not self.stop.is_set():
            value = b"torture-%09d" % i
            try:
                self.producer.send(self.topic, value).add_done_callback(self._remember(value))
            except Exception:  # noqa: BLE001 - buffer full while the node is down: wait
                time.sleep(0.05)
                continue
            i += 1
            if i % 20 == 0:
                time.sleep(0.01)  # about 2,000 records/s: a full run reads back in seconds

    def _remember(self, value: bytes):
        def done(future) -> None:
            if future.exception() is None:
                with self.lock:
                    offset = future.result().offset
                    assert offset not in self.acked, f"offset {offset} acknowledged twice"
                    self.acked[offset] = value

        return done

    def count(self) -> int:
        with self.lock:
            return len(self.acked)

    def wait_for_progress(self, more_than: int, timeout: float = 60) -> None:
        eventually(lambda: self.count() > more_than, timeout, "acknowledged writes")

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)
        self.producer.close(timeout=15)


def read_until(bootstrap: str, tp: TopicPartition, last: int, timeout: float = 120) -> dict:
    """Every record from the log start through offset `last` (or what came within `timeout`)."""
    read: dict[int, bytes] = {}
    with Consumer(bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and consumer.position(tp) <= last:
            for r in consumer.poll(timeout_ms=500):
                assert r.offset not in read, f"offset {r.offset} delivered twice"
                read[r.offset] = r.value
    return read


def check_every_ack_read_back(bootstrap: str, writer: Writer) -> None:
    with writer.lock:
        acknowledged = dict(writer.acked)
    assert acknowledged, "nothing was acknowledged"
    read = read_until(bootstrap, TopicPartition(writer.topic, 0), max(acknowledged))
    missing = sorted(set(acknowledged) - set(read))
    assert not missing, f"{len(missing)} acknowledged records lost, first at offset {missing[0]}"
    wrong = [o for o, v in acknowledged.items() if read[o] != v]
    assert not wrong, f"{len(wrong)} offsets hold another value than acknowledged, e.g. {wrong[0]}"


def test_single_node_acks1_survives_repeated_kill9(node, capsys):
    rng = _rng()
    with Writer(node.address, "torture", acks=1) as writer:
        for _cycle in range(CYCLES):
            writer.wait_for_progress(writer.count())
            time.sleep(rng.uniform(0.0, 0.4))  # a random point in the write stream
            node.kill9()
            time.sleep(rng.uniform(0.0, 0.2))
            node.start()
        writer.wait_for_progress(writer.count())
    check_every_ack_read_back(node.address, writer)


def test_rf3_acks_all_survives_repeated_kill9_of_brokers(cluster_factory, capsys):
    rng = _rng()
    cluster = cluster_factory(1, 3, **FAST)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics(
            [
                NewTopic(
                    "torture",
                    num_partitions=1,
                    replication_factor=3,
                    configs={"min.insync.replicas": "2"},
                )
            ]
        )
    eventually(
        lambda: (p := partition_state(cluster.brokers[0].address, "torture")) and len(p.isr) == 3,
        30,
        "the full ISR",
    )
    with Writer(cluster.bootstrap, "torture", acks="all") as writer:
        for _cycle in range(CYCLES):
            writer.wait_for_progress(writer.count())
            time.sleep(rng.uniform(0.0, 0.4))
            # The leader half the time: its kill is the one that moves leadership.
            leader = partition_state(cluster.brokers[0].address, "torture")
            victims = [
                b for b in cluster.brokers if leader is not None and b.node_id == leader.leader
            ]
            victim = victims[0] if victims and rng.random() < 0.5 else rng.choice(cluster.brokers)
            victim.kill9()
            time.sleep(rng.uniform(0.0, 0.3))
            victim.spawn()
            victim.wait_started()
            # Back in the ISR before the next kill: never two brokers' copies missing at once.
            eventually(
                lambda: (p := partition_state(victim.address, "torture")) and len(p.isr) == 3,
                60,
                "the full ISR again",
            )
        writer.wait_for_progress(writer.count())
    check_every_ack_read_back(cluster.bootstrap, writer)
