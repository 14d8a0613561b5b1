"""read_committed against a real node: a partition holding a committed transaction, an aborted
one, a plain batch and a transaction still open. A read_committed consumer (library and `kraft
consume --isolation-level read_committed`) gets exactly the committed records and the plain
ones, never past the open transaction, also after kill -9 and a restart; read_uncommitted gets
every record; neither ever sees a control record. Transactional batches and markers go in over raw gRPC, as the producer and the
transaction coordinator send them."""

from __future__ import annotations

import time

import pytest
from processes import run_kraft
from raw_node import RawNode

from clients.consumer import Consumer
from clients.record.codec import encode_batch
from clients.types import TopicPartition
from clients.wire import broker_pb2 as bpb

pytestmark = pytest.mark.e2e

COMMITTED, ABORTED, OPEN = 1001, 1002, 1003
TP = TopicPartition("txn", 0)


class Raw(RawNode):
    def produce(self, records: bytes) -> int:
        req = bpb.ProduceRequest(
            acks=-1,
            timeout_ms=5000,
            topics=[
                bpb.TopicProduceData(
                    name=TP.topic,
                    partitions=[bpb.PartitionProduceData(partition=0, records=records)],
                )
            ],
        )
        for _ in range(50):  # the new partition's leader may not be ready yet
            answer = self.broker.Produce(req, timeout=10).topics[0].partitions[0]
            if answer.error_code == 0:
                return answer.base_offset
            time.sleep(0.2)
        raise AssertionError(answer.error_message)

    def end_txn(self, pid: int, committed: bool) -> None:
        req = bpb.WriteTxnMarkersRequest(
            markers=[
                bpb.TxnMarker(
                    producer_id=pid,
                    producer_epoch=0,
                    committed=committed,
                    coordinator_epoch=0,
                    topics=[bpb.TopicPartitions(topic=TP.topic, partitions=[0])],
                )
            ]
        )
        [answer] = self.broker.WriteTxnMarkers(req, timeout=10).markers[0].partitions
        assert answer.error_code == 0, answer.error_message


def txn(pid: int, seq: int, *values: bytes) -> bytes:
    return encode_batch(
        [(None, v, (), int(time.time() * 1000)) for v in values],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def consume(address: str, isolation_level: str, expected: int) -> list:
    got = []
    with Consumer(
        address,
        auto_offset_reset="earliest",
        isolation_level=isolation_level,
        fetch_max_wait_ms=100,
    ) as consumer:
        consumer.assign([TP])
        consumer.seek_to_beginning(TP)
        deadline = time.monotonic() + 20
        while len(got) < expected and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout_ms=200))
        got.extend(consumer.poll(timeout_ms=1000))  # nothing more may come
        end = consumer.end_offsets([TP])[TP]
    return got, end


def fill(raw: Raw) -> int:
    """A committed, an aborted and an open transaction, plain records between; returns the
    open transaction's first offset."""
    raw.create(TP.topic)
    raw.produce(txn(COMMITTED, 0, b"c1", b"c2"))
    raw.produce(txn(ABORTED, 0, b"a1", b"a2"))
    raw.produce(txn(COMMITTED, 2, b"c3"))
    raw.end_txn(COMMITTED, True)
    raw.end_txn(ABORTED, False)
    raw.produce(encode_batch([(None, b"p1", (), int(time.time() * 1000))]))
    open_at = raw.produce(txn(OPEN, 0, b"o1"))
    raw.produce(encode_batch([(None, b"p2", (), int(time.time() * 1000))]))  # behind o1
    return open_at


def test_read_committed_reads_exactly_the_committed_records(node):
    raw = Raw(node.address)
    open_at = fill(raw)

    committed, lso = consume(node.address, "read_committed", 4)
    assert [r.value for r in committed] == [b"c1", b"c2", b"c3", b"p1"]
    assert lso == open_at
    everything, hw = consume(node.address, "read_uncommitted", 8)
    assert [r.value for r in everything] == [b"c1", b"c2", b"a1", b"a2", b"c3", b"p1", b"o1", b"p2"]
    assert hw == open_at + 2

    cli = run_kraft(
        "consume",
        TP.topic,
        "--from-beginning",
        "--isolation-level",
        "read_committed",
        "--max-messages",
        "4",
        "--timeout-ms",
        "10000",
        "--bootstrap-server",
        node.address,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.split() == ["c1", "c2", "c3", "p1"]

    raw.end_txn(OPEN, False)  # the open one aborts: the plain record behind it shows
    after, lso = consume(node.address, "read_committed", 5)
    assert [r.value for r in after] == [b"c1", b"c2", b"c3", b"p1", b"p2"]
    assert lso == open_at + 3


def test_after_kill9_the_open_and_aborted_transactions_are_still_known(node):
    open_at = fill(Raw(node.address))
    node.kill9()
    node.start()
    committed, lso = consume(node.address, "read_committed", 4)
    assert [r.value for r in committed] == [b"c1", b"c2", b"c3", b"p1"]
    assert lso == open_at
