"""Transactions on real nodes: exactly-once consume-transform-produce across kill -9 of the
transaction coordinator's broker and of a partition leader; a zombie producer fenced; a
transaction left open past its timeout aborted by the coordinator."""

from __future__ import annotations

import collections
import time

import pytest
from waiting import eventually

from clients.admin import Admin, NewTopic
from clients.bridge import open_channel
from clients.consumer import Consumer
from clients.errors import ErrorCode, KraftError
from clients.producer import Producer
from clients.types import TopicPartition as TP
from clients.wire import group_pb2, group_pb2_grpc

pytestmark = pytest.mark.e2e

FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
}
FENCED = {ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH}
IN, OUT, GROUP, TXN_ID = "etl-in", "etl-out", "etl", "etl-1"
PARTITIONS = 3


def read_committed(
    bootstrap: str, topic: str, partitions: int, expect_at_least: int = 0, within: float = 30.0
) -> list:
    """Every record of `topic` a read_committed consumer reads up to the end (the LSO)."""
    consumer = Consumer(
        bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    tps = [TP(topic, p) for p in range(partitions)]
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records: list = []
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            ends = consumer.end_offsets(tps)
            records += consumer.poll(timeout_ms=300)
            if len(records) >= expect_at_least and all(
                consumer.position(tp) >= ends[tp] for tp in tps
            ):
                return records
        raise AssertionError(f"{topic} not read to its end in {within} s ({len(records)} records)")
    finally:
        consumer.close()


def coordinator_of(address: str, transactional_id: str) -> int:
    stub = group_pb2_grpc.GroupStub(open_channel(address))
    answer = stub.FindCoordinator(
        group_pb2.FindCoordinatorRequest(key=transactional_id, key_type=1), timeout=10
    )
    assert answer.error_code == 0, answer.error_message
    return answer.node_id


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    with Admin(bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions[partition].leader


class Processor:
    """Kafka's exactly-once loop: poll read_committed, write each record transformed in one
    transaction with the consumed offsets; any failure closes both clients and starts again
    (the new producer's init_transactions fences the old one and aborts what it left open)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.commits = 0
        self.restarts = 0

    def run_until(self, done, on_commit=lambda commits: None, within: float = 180.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            producer = Producer(
                self.bootstrap,
                transactional_id=TXN_ID,
                transaction_timeout_ms=10_000,
                request_timeout_ms=3000,
            )
            consumer = Consumer(
                self.bootstrap,
                group_id=GROUP,
                isolation_level="read_committed",
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                fetch_max_wait_ms=100,
                request_timeout_ms=3000,
                max_poll_records=20,
            )  # many transactions, faults between
            try:
                producer.init_transactions(60)
                consumer.subscribe([IN])
                while time.monotonic() < deadline:
                    records = consumer.poll(timeout_ms=300)
                    if not records:
                        if done():
                            return
                        continue
                    producer.begin_transaction()
                    offsets = {}
                    for r in records:
                        producer.send(
                            OUT,
                            b"%d:%d:%s" % (r.partition, r.offset, r.value),
                            partition=r.partition,
                        )
                        offsets[TP(r.topic, r.partition)] = r.offset + 1
                    producer.send_offsets_to_transaction(offsets, consumer.group_metadata(), 30)
                    producer.commit_transaction(30)
                    self.commits += 1
                    on_commit(self.commits)
            except (KraftError, TimeoutError):
                self.restarts += 1
            finally:
                consumer.close()
                producer.close(timeout=5)
        raise AssertionError(
            f"not done in {within} s ({self.commits} commits, {self.restarts} restarts)"
        )


def test_exactly_once_across_kill9_of_the_coordinator_and_a_partition_leader(cluster_factory):
    cluster = cluster_factory(
        controllers=1, brokers=3, **{k.replace(".", "_"): v for k, v in FAST.items()}
    )
    bootstrap = cluster.bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topics(
            [NewTopic(t, PARTITIONS, 3, {"min.insync.replicas": "2"}) for t in (IN, OUT)]
        )
    total = 600
    with Producer(bootstrap, acks="all") as feeder:
        for i in range(total):
            feeder.send(IN, b"v%d" % i, partition=i % PARTITIONS)
        feeder.flush(30)
    killed: dict[str, int] = {}

    def live() -> str:
        return ",".join(b.address for b in cluster.brokers if b.alive())

    def fault(commits: int) -> None:
        if commits == 3 and "coordinator" not in killed:
            node = coordinator_of(live().split(",")[0], TXN_ID)
            killed["coordinator"] = node
            cluster.nodes[node].kill9()
        elif commits == 8 and "leader" not in killed:
            node = leader_of(live(), OUT, 0)
            killed["leader"] = node
            cluster.nodes[node].kill9()
        for node in killed.values():
            if commits in (6, 11) and not cluster.nodes[node].alive():
                cluster.nodes[node].spawn()  # back, to catch up as a follower

    def consumed_all() -> bool:
        with Admin(bootstrap) as admin:
            offsets = admin.list_group_offsets(GROUP)
        return sum(offsets.get(TP(IN, p), 0) for p in range(PARTITIONS)) >= total

    processor = Processor(bootstrap)
    processor.run_until(consumed_all, fault)
    assert set(killed) == {"coordinator", "leader"}, (killed, processor.commits)

    out = read_committed(bootstrap, OUT, PARTITIONS, expect_at_least=total)
    seen = collections.Counter(r.value for r in out)
    expected = {b"%d:%d:v%d" % (i % PARTITIONS, i // PARTITIONS, i) for i in range(total)}
    assert set(seen) == expected, (
        sorted(set(seen) - expected)[:5],
        sorted(expected - set(seen))[:5],
    )
    assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]


@pytest.fixture
def node(node_factory):
    n = node_factory(
        "node1",
        [
            f"{k}={v}"
            for k, v in {
                **FAST,
                "offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
            }.items()
        ],
    )
    n.start()
    with Admin(n.address) as admin:
        admin.create_topics([NewTopic(OUT, 1)])
    return n


def test_a_zombie_producer_is_fenced_and_its_writes_never_read(node):
    zombie = Producer(node.address, transactional_id="z")
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.send(OUT, b"zombie", partition=0)
    zombie.flush(10)

    successor = Producer(node.address, transactional_id="z")
    successor.init_transactions(30)  # bumps the epoch: the zombie's transaction is aborted
    successor.begin_transaction()
    successor.send(OUT, b"successor", partition=0)
    successor.commit_transaction(30)

    with pytest.raises(KraftError) as raised:
        zombie.send(OUT, b"zombie again", partition=0)
        zombie.commit_transaction(10)
    assert raised.value.code in FENCED, raised.value
    zombie.close(timeout=5)
    successor.close(timeout=5)
    values = [r.value for r in read_committed(node.address, OUT, 1, expect_at_least=1)]
    assert values == [b"successor"]


def test_a_transaction_left_open_past_its_timeout_is_aborted(node):
    stalled = Producer(node.address, transactional_id="slow", transaction_timeout_ms=1000)
    stalled.init_transactions(30)
    stalled.begin_transaction()
    stalled.send(OUT, b"never committed", partition=0)
    stalled.flush(10)
    # The open transaction holds the LSO at its first offset until the coordinator aborts it.
    consumer = Consumer(node.address, isolation_level="read_committed")
    lso = eventually(
        lambda: consumer.end_offsets([TP(OUT, 0)])[TP(OUT, 0)] >= 2 or None,
        20,
        "the last stable offset past the aborted transaction's marker",
    )
    consumer.close()
    assert lso
    assert read_committed(node.address, OUT, 1) == []
    with Admin(node.address) as admin:
        [described] = admin.describe_transactions(["slow"])
    assert described.state in ("CompleteAbort", "Empty"), described
    with pytest.raises(KraftError):
        stalled.commit_transaction(10)
    stalled.close(timeout=5)
