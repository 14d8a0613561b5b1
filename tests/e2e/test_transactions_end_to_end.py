"""Transactions on a real node, all three parts together: a consume-transform-produce loop with
the transactional producer. A committed transaction's records reach a read_committed consumer
and its offsets the group; an aborted one's do neither; a second producer with the same
transactional id fences the first."""

from __future__ import annotations

import threading
import time

import pytest
from raw_node import RawNode

from clients.admin import Admin, NewTopic
from clients.consumer import Consumer
from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.producer import Producer
from clients.record.codec import encode_batch
from clients.types import TopicPartition as TP
from clients.wire import broker_pb2 as bpb

pytestmark = pytest.mark.e2e

NODE = [
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.num.partitions=1",
    "offsets.topic.replication.factor=1",
    "transaction.state.log.num.partitions=1",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
]


def read_all(address: str, topic: str, isolation: str) -> list[bytes]:
    with Consumer(
        address, isolation_level=isolation, auto_offset_reset="earliest", fetch_max_wait_ms=100
    ) as c:
        c.assign([TP(topic, 0)])
        out, empty = [], 0
        while empty < 5:
            got = c.poll(timeout_ms=200)
            empty = 0 if got else empty + 1
            out += [r.value for r in got]
        return out


def test_consume_transform_produce_commits_and_aborts(node_factory):
    node = node_factory("node1", NODE)
    node.start()
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("in", num_partitions=1), NewTopic("out", num_partitions=1)])
    with Producer(node.address, linger_ms=0) as p:
        for i in range(4):
            p.send("in", b"%d" % i, partition=0)
    with (
        Consumer(
            node.address,
            group_id="etl",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            fetch_max_wait_ms=100,
        ) as c,
        Producer(node.address, transactional_id="etl-1", linger_ms=0) as p,
    ):
        c.subscribe(["in"])
        records = []
        while len(records) < 4:
            records += c.poll(timeout_ms=500)
        p.init_transactions(30)
        p.begin_transaction()  # the first two, committed
        for r in records[:2]:
            p.send("out", b"x" + r.value, partition=0)
        p.send_offsets_to_transaction({TP("in", 0): records[1].offset + 1}, c.group_metadata(), 30)
        p.commit_transaction(30)
        p.begin_transaction()  # the next two, aborted
        for r in records[2:]:
            p.send("out", b"x" + r.value, partition=0)
        p.send_offsets_to_transaction({TP("in", 0): records[3].offset + 1}, c.group_metadata(), 30)
        p.flush()
        p.abort_transaction(30)
        assert c.committed([TP("in", 0)]) == {TP("in", 0): 2}
    assert read_all(node.address, "out", "read_committed") == [b"x0", b"x1"]
    assert read_all(node.address, "out", "read_uncommitted") == [b"x0", b"x1", b"x2", b"x3"]
    with Admin(node.address) as admin:
        [desc] = admin.describe_transactions(["etl-1"])
        assert desc.state == "CompleteAbort" and desc.partitions == ()
        assert [t.transactional_id for t in admin.list_transactions()] == ["etl-1"]


def test_a_second_producer_with_the_same_id_fences_the_first(node_factory):
    node = node_factory("node1", NODE)
    node.start()
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("out", num_partitions=1)])
    with (
        Producer(node.address, transactional_id="app", linger_ms=0) as old,
        Producer(node.address, transactional_id="app", linger_ms=0) as new,
    ):
        old.init_transactions(30)
        old.begin_transaction()
        old.send("out", b"zombie", partition=0)
        old.flush()
        new.init_transactions(30)  # aborts the old one's open transaction
        new.begin_transaction()
        new.send("out", b"live", partition=0)
        new.commit_transaction(30)
        with pytest.raises(KraftError) as fenced:
            old.commit_transaction(30)
        assert fenced.value.code in (E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH)
        with pytest.raises(KraftError, match="close it"):
            old.begin_transaction()
    assert read_all(node.address, "out", "read_committed") == [b"live"]


def test_a_read_committed_consumer_waits_for_offsets_a_transaction_holds(node_factory):
    """KIP-447: while a transaction holds offsets for a partition, a read_committed consumer of
    the group (a new owner after a rebalance) gets them once the transaction commits, not the
    offset before them, from which it would process again what that transaction consumed.
    A read_uncommitted one gets the offset in effect at once, as Kafka's does."""
    node = node_factory("node1", NODE)
    node.start()
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("in", num_partitions=1), NewTopic("out", num_partitions=1)])
    tp = TP("in", 0)
    with (
        Consumer(
            node.address, group_id="etl", isolation_level="read_committed", enable_auto_commit=False
        ) as stable,
        Consumer(node.address, group_id="etl", enable_auto_commit=False) as loose,
        Producer(node.address, transactional_id="etl-1", linger_ms=0) as p,
    ):
        p.init_transactions(30)
        p.begin_transaction()
        p.send("out", b"x", partition=0)
        p.send_offsets_to_transaction({tp: 42}, stable.group_metadata(), 30)
        assert loose.committed([tp]) == {tp: None}
        committer = threading.Timer(1.0, p.commit_transaction, (30,))
        committer.start()
        try:
            started = time.monotonic()
            assert stable.committed([tp]) == {tp: 42}
            assert time.monotonic() - started >= 0.5  # it waited for the commit
        finally:
            committer.join()
        assert loose.committed([tp]) == {tp: 42}


def test_a_batch_after_its_transaction_ended_cannot_open_a_hanging_one(node_factory):
    """KIP-890 part 1: a transactional batch that arrives after its transaction ended (a retry
    held up in the network) must not open a transaction no coordinator knows of, which nothing
    would ever end: the leader asks the coordinator and refuses it, on the partition the
    transaction wrote and on one it never added, and no last stable offset is held back."""
    node = node_factory("node1", NODE)
    node.start()
    with Admin(node.address) as admin:
        admin.create_topics([NewTopic("out", num_partitions=2)])
    with Producer(node.address, transactional_id="etl-1", linger_ms=0) as p:
        p.init_transactions(30)
        p.begin_transaction()
        p.send("out", b"a", partition=0)
        p.commit_transaction(30)
        with Admin(node.address) as admin:
            [desc] = admin.describe_transactions(["etl-1"])
        late = encode_batch(
            [(None, b"late", (), int(time.time() * 1000))],
            producer_id=desc.producer_id,
            producer_epoch=desc.producer_epoch,
            base_sequence=1,
            is_transactional=True,
        )
        raw = RawNode(node.address)
        for partition in (0, 1):
            req = bpb.ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                transactional_id="etl-1",
                topics=[
                    bpb.TopicProduceData(
                        name="out",
                        partitions=[bpb.PartitionProduceData(partition=partition, records=late)],
                    )
                ],
            )
            [answer] = raw.broker.Produce(req, timeout=10).topics[0].partitions
            assert answer.error_code == E.INVALID_TXN_STATE, (partition, answer.error_message)
            assert "not in an ongoing transaction" in answer.error_message
        # The producer itself goes on: its next transaction's batches are checked and pass.
        p.begin_transaction()
        p.send("out", b"b", partition=1)
        p.commit_transaction(30)
    tps = [TP("out", 0), TP("out", 1)]
    with Consumer(node.address, isolation_level="read_committed") as c:
        stable = c.end_offsets(tps)
    with Consumer(node.address) as c:
        assert stable == c.end_offsets(tps) == {tps[0]: 2, tps[1]: 2}  # a record and a marker
    assert read_all(node.address, "out", "read_committed") == [b"a"]
