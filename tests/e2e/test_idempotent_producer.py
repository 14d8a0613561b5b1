"""A real node over raw gRPC: InitProducerId deals an id, the same idempotent batch sent twice is
stored once (the second answer carries the original offset), a gap or a stale epoch is refused with
the log unchanged, and after a restart (clean, or kill -9) a re-sent batch is still a duplicate."""

from __future__ import annotations

import pytest
from raw_node import RawNode

from clients.errors import ErrorCode
from clients.producer import Producer
from clients.record.codec import encode_batch, iter_batches
from clients.wire import broker_pb2 as bpb

pytestmark = pytest.mark.e2e


class Raw(RawNode):
    def init_producer_id(self, producer_id: int | None = None, epoch: int | None = None):
        req = bpb.InitProducerIdRequest()
        if producer_id is not None:
            req.producer_id, req.producer_epoch = producer_id, epoch
        answer = self.broker.InitProducerId(req, timeout=15)
        assert answer.error_code == 0, answer.error_message
        return answer.producer_id, answer.producer_epoch

    def produce(self, topic: str, records: bytes):
        req = bpb.ProduceRequest(
            acks=-1,
            timeout_ms=5000,
            topics=[
                bpb.TopicProduceData(
                    name=topic, partitions=[bpb.PartitionProduceData(partition=0, records=records)]
                )
            ],
        )
        return self.broker.Produce(req, timeout=10).topics[0].partitions[0]

    def batches(self, topic: str) -> list:
        """Every batch header of partition 0 (a fetch answers from one segment at a time)."""
        headers: list = []
        while True:
            offset = headers[-1].next_offset if headers else 0
            req = bpb.FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    bpb.FetchTopic(
                        topic=topic,
                        partitions=[
                            bpb.FetchPartition(
                                partition=0,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=1 << 20,
                            )
                        ],
                    )
                ],
            )
            answer = self.broker.Fetch(req, timeout=10).topics[0].partitions[0]
            assert answer.error_code == 0, answer.error_message
            more = [h for _, h in iter_batches(answer.records)]
            if not more:
                return headers
            headers += more


def batch(pid: int, epoch: int, seq: int, n: int = 3) -> bytes:
    records = [(b"k%d" % i, b"seq-%d" % (seq + i), (), 1_700_000_000_000 + i) for i in range(n)]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicates_gaps_and_stale_epochs_never_change_the_log(node):
    raw = Raw(node.address)
    raw.create("t")
    pid, epoch = raw.init_producer_id()
    assert pid >= 0 and epoch == 0
    assert raw.init_producer_id()[0] != pid  # every producer its own id

    first = batch(pid, 0, 0)
    assert raw.produce("t", first).base_offset == 0
    again = raw.produce("t", first)
    assert (again.error_code, again.base_offset) == (0, 0)  # the original offset, no append
    assert raw.produce("t", batch(pid, 0, 3, n=2)).base_offset == 3

    gap = raw.produce("t", batch(pid, 0, 10))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "expected 5" in gap.error_message
    assert raw.produce("t", batch(pid, 0, 1)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER

    assert raw.init_producer_id(pid, 0) == (pid, 1)  # the epoch bump
    assert raw.produce("t", batch(pid, 1, 1)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert raw.produce("t", batch(pid, 1, 0)).base_offset == 5  # a new epoch starts at 0
    stale = raw.produce("t", batch(pid, 0, 5))
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH and "fenced" in stale.error_message
    # A producer this partition does not know (expired, or its batches deleted) is taken at
    # the sequence it is at, as Kafka does since KIP-360; from then on it is checked.
    unknown = raw.produce("t", batch(pid + 500, 0, 7))
    assert (unknown.error_code, unknown.base_offset) == (0, 8)

    stored = raw.batches("t")
    assert [(h.base_offset, h.producer_epoch, h.base_sequence) for h in stored] == [
        (0, 0, 0),
        (3, 0, 3),
        (5, 1, 0),
        (8, 0, 7),
    ]


def test_duplicates_are_recognised_after_a_restart_and_after_kill_9(node):
    raw = Raw(node.address)
    raw.create("t")
    pid, _ = raw.init_producer_id()
    for seq in (0, 3, 6):
        assert raw.produce("t", batch(pid, 0, seq)).error_code == 0
    last = batch(pid, 0, 9)
    assert raw.produce("t", last).base_offset == 9

    assert node.stop() == 0  # clean: a snapshot is written
    snapshots = list(node.data_dir.rglob("t-0/*.snapshot"))
    assert [p.name for p in snapshots] == ["00000000000000000012.snapshot"]
    node.start()
    raw = Raw(node.address)
    assert (raw.produce("t", last).error_code, raw.produce("t", last).base_offset) == (0, 9)
    assert raw.produce("t", batch(pid, 0, 3)).base_offset == 3  # one of the last five
    newest = batch(pid, 0, 12)
    assert raw.produce("t", newest).base_offset == 12

    node.kill9()  # no snapshot of offset 12..14
    node.start()
    raw = Raw(node.address)
    answer = raw.produce("t", newest)
    assert (answer.error_code, answer.base_offset) == (0, 12)
    assert raw.produce("t", batch(pid, 0, 20)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [h.base_offset for h in raw.batches("t")] == [0, 3, 6, 9, 12]


def test_the_producer_is_idempotent_by_default_with_acks_all(node):
    raw = Raw(node.address)
    raw.create("p")
    with Producer(node.address, acks="all", linger_ms=1, batch_size=200) as producer:
        futures = [producer.send("p", b"value-%03d" % i) for i in range(100)]
        producer.flush(10)
    assert [f.result(0).offset for f in futures] == list(range(100))
    stored = raw.batches("p")
    assert len({h.producer_id for h in stored}) == 1 and stored[0].producer_id >= 0
    assert [h.base_sequence for h in stored] == [h.base_offset for h in stored]
